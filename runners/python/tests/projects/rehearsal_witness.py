"""A crew whose module registers a listener that writes each kickoff it hears, with its pid, to $WITNESS_FILE."""

import os

from crewai.events import crewai_event_bus
from crewai.events.types.crew_events import CrewKickoffStartedEvent

from crews import AnswerLLM, _one_task_crew


@crewai_event_bus.on(CrewKickoffStartedEvent)
def witness(source, event):
    with open(os.environ["WITNESS_FILE"], "a") as witnessed:
        witnessed.write(f"{os.getpid()}\n")


def crew():
    return _one_task_crew(AnswerLLM(model="test/answer"))
