#!/usr/bin/env python
"""`crewai run` / `run_crew` entry point; on crewd the runner calls Research().crew().kickoff(inputs=<run input>)."""

from research.crew import Research


def run():
    result = Research().crew().kickoff(inputs={"topic": "solar batteries"})
    print(result.raw)


if __name__ == "__main__":
    run()
