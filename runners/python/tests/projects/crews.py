"""Small CrewAI crews and a flow for the runner's tests, on deterministic models."""

from crewai import Agent, Crew, Task
from crewai.events import crewai_event_bus
from crewai.events.types.task_events import TaskCompletedEvent
from crewai.flow.flow import Flow, listen, start
from crewai.llms.base_llm import BaseLLM
from pydantic import BaseModel

from garbage import print_garbage


@crewai_event_bus.on(TaskCompletedEvent)
def crews_own_listener(source, event):
    """A listener the crew registers itself: the runner's handlers must not replace it."""
    print(f"the crew's own listener saw {event.task.name}")


class AnswerLLM(BaseLLM):
    """Answers every call with the same final answer; prints garbage first when asked to."""

    answer: str = "done"
    noisy: bool = False

    def call(
        self,
        messages,
        tools=None,
        callbacks=None,
        available_functions=None,
        from_task=None,
        from_agent=None,
        response_model=None,
    ):
        if self.noisy:
            print_garbage()
        return f"Thought: I now know the final answer\nFinal Answer: {self.answer}"


class BrokenLLM(BaseLLM):
    def call(
        self,
        messages,
        tools=None,
        callbacks=None,
        available_functions=None,
        from_task=None,
        from_agent=None,
        response_model=None,
    ):
        raise ValueError("the model is unreachable")


def _one_task_crew(llm):
    writer = Agent(role="Writer", goal="Write one line about {topic}", backstory="Brief.", llm=llm, max_retry_limit=0)
    task = Task(name="write", description="Write one line about {topic}", expected_output="One line", agent=writer)
    return Crew(agents=[writer], tasks=[task])


def echo_crew():
    return _one_task_crew(AnswerLLM(model="answer", answer="one line"))


def noisy_crew():
    return _one_task_crew(AnswerLLM(model="answer", answer="the real answer", noisy=True))


def raising_crew():
    return _one_task_crew(BrokenLLM(model="broken"))


class OutlineState(BaseModel):
    topic: str = ""
    steps: list[str] = []


class OutlineFlow(Flow[OutlineState]):
    @start()
    def pick_topic(self):
        self.state.steps.append("pick_topic")
        return self.state.topic.upper()

    @listen(pick_topic)
    def outline(self, topic):
        self.state.steps.append("outline")
        return {"outline": [f"{topic}: intro", f"{topic}: details"]}
