#!/usr/bin/env python
"""`crewai run` / `kickoff` entry point; on crewd the runner calls PoemFlow().kickoff(inputs=<run input>)."""

from pydantic import BaseModel

from crewai.flow import Flow, listen, start

from poem_flow.crews.poem_crew.poem_crew import PoemCrew


class PoemState(BaseModel):
    sentence_count: int = 1
    poem: str = ""


class PoemFlow(Flow[PoemState]):
    @start()
    def generate_sentence_count(self):
        # The template picks a random count; here the run's input decides, kept between 1 and 5.
        self.state.sentence_count = max(1, min(5, self.state.sentence_count))
        print("Generating sentence count", self.state.sentence_count)

    @listen(generate_sentence_count)
    def generate_poem(self):
        print("Generating poem")
        result = PoemCrew().crew().kickoff(inputs={"sentence_count": self.state.sentence_count})
        self.state.poem = result.raw
        return result.raw

    @listen(generate_poem)
    def save_poem(self, poem):
        # The template writes poem.txt; a crew's folder on crewd is read-only, so the poem is the flow's result.
        print("Saving poem")
        return poem


def kickoff():
    PoemFlow().kickoff(inputs={"sentence_count": 2})


def plot():
    PoemFlow().plot()


if __name__ == "__main__":
    kickoff()
