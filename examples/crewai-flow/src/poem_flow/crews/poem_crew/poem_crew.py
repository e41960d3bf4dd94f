from crewai import Agent, Crew, Process, Task
from crewai.agents.agent_builder.base_agent import BaseAgent
from crewai.project import CrewBase, agent, crew, task

from poem_flow.llm import crew_llm


@CrewBase
class PoemCrew:
    """Poem Crew: one writer, one task."""

    agents: list[BaseAgent]
    tasks: list[Task]

    agents_config = "config/agents.yaml"
    tasks_config = "config/tasks.yaml"

    @agent
    def poem_writer(self) -> Agent:
        return Agent(config=self.agents_config["poem_writer"], llm=crew_llm())  # type: ignore[index]

    @task
    def write_poem(self) -> Task:
        return Task(config=self.tasks_config["write_poem"])  # type: ignore[index]

    @crew
    def crew(self) -> Crew:
        return Crew(agents=self.agents, tasks=self.tasks, process=Process.sequential, verbose=True)
