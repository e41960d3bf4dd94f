"""CrewAI crews and flows through the runner: events from CrewAI's event bus and the shaped result."""

import json

import pytest

from conftest import EXAMPLES, PROJECTS, request, run_python, run_runner, runner_env

RESEARCHER = "solar batteries Senior Data Researcher"
ANALYST = "solar batteries Reporting Analyst"


@pytest.fixture(scope="module")
def research_run():
    """One run of the example crew, shared: importing CrewAI takes seconds. A new interpreter's, as crewd starts one
    without a fork server (the other tests' runs are forked from the zygote, which imported CrewAI)."""
    return run_runner(
        "crew",
        "research.crew:Research",
        EXAMPLES / "crewai-research",
        request({"topic": "solar batteries"}),
        fresh=True,
    )


def test_the_research_crew_reports_its_tasks_agents_tool_and_model_calls(research_run):
    result = research_run

    assert result.returncode == 0, result.stderr
    assert result.of_type("task.started") == [
        {"task": "research_task", "agent": RESEARCHER},
        {"task": "reporting_task", "agent": ANALYST},
    ]
    completed = result.of_type("task.completed")
    assert [(data["task"], data["agent"]) for data in completed] == [
        ("research_task", RESEARCHER),
        ("reporting_task", ANALYST),
    ]
    assert "keywords solar, batteries" in completed[0]["output"]
    assert [(data["agent"], data["action"]) for data in result.of_type("agent.action")] == [
        (RESEARCHER, "started"),
        (RESEARCHER, "finished"),
        (ANALYST, "started"),
        (ANALYST, "finished"),
    ]
    tool_uses = result.of_type("tool_use")
    assert [data["tool"] for data in tool_uses] == ["keyword_extractor", "keyword_extractor"]
    assert "solar batteries" in str(tool_uses[0]["input"])
    assert tool_uses[1]["output"] == "solar, batteries"
    assert tool_uses[1]["agent"] == RESEARCHER
    llm_calls = result.of_type("llm.call")
    assert len(llm_calls) == 3
    assert all(call["model"] == "crewd/deterministic" and call["usage"]["total_tokens"] > 0 for call in llm_calls)


def test_the_crew_result_is_raw_json_tasks_and_token_usage(research_run):
    result = research_run

    assert result.last["type"] == "run.completed"
    output = result.last["data"]["output"]
    assert set(output) == {"raw", "json", "tasks", "token_usage"}
    assert output["raw"].startswith("# solar batteries")
    assert output["json"] is None
    assert [(task["task"], task["agent"]) for task in output["tasks"]] == [
        ("research_task", RESEARCHER),
        ("reporting_task", ANALYST),
    ]
    assert output["tasks"][1]["raw"] == output["raw"]
    assert output["token_usage"]["total_tokens"] > 0


def test_events_arrive_in_the_order_crewai_emitted_them(research_run):
    result = research_run

    order = [(event["type"], event["data"].get("action")) for event in result.events if event["type"] != "log"]
    assert order[:3] == [("task.started", None), ("agent.action", "started"), ("llm.call", None)]
    assert order[-3:] == [("agent.action", "finished"), ("task.completed", None), ("run.completed", None)]


def test_a_crew_from_a_function_gets_the_run_input(projects):
    result = run_runner("crew", "crews:echo_crew", projects, request({"topic": "bees"}))

    assert result.of_type("task.started") == [{"task": "write", "agent": "Writer"}]
    assert result.last["data"]["output"]["raw"] == "one line"
    assert "the crew's own listener saw write" in result.logs()


def test_a_flow_reports_each_method_and_returns_its_result_and_state(projects):
    result = run_runner("flow", "crews:OutlineFlow", projects, request({"topic": "bees"}))

    assert result.returncode == 0, result.stderr
    assert result.of_type("task.started") == [
        {"task": "pick_topic", "flow": "OutlineFlow"},
        {"task": "outline", "flow": "OutlineFlow"},
    ]
    assert result.of_type("task.completed") == [
        {"task": "pick_topic", "flow": "OutlineFlow", "output": "BEES"},
        {"task": "outline", "flow": "OutlineFlow", "output": {"outline": ["BEES: intro", "BEES: details"]}},
    ]
    output = result.last["data"]["output"]
    assert output["result"] == {"outline": ["BEES: intro", "BEES: details"]}
    assert output["state"]["topic"] == "bees"
    assert output["state"]["steps"] == ["pick_topic", "outline"]


def last_line_of(script):
    """Runs `script` in an interpreter of its own (CrewAI's state is process-wide; forked from the zygote), in the test
    projects' folder; its last line of output, as JSON."""
    completed = run_python(["-c", script], PROJECTS, runner_env())
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.splitlines()[-1])


WARM_UP_CHECK = """
import json
from crewai.agents.agent_executor import AgentExecutor
from crewai.events import crewai_event_bus
from crewd_runner import crewai_adapter, internals

before = "_flow_definition" in AgentExecutor.__dict__
crewai_adapter.warm_up()
built = "_flow_definition" in AgentExecutor.__dict__
started_by_server = internals.bus_threads_started(crewai_event_bus)
crewai_adapter.warm_up_child()
print(json.dumps([before, built, started_by_server, internals.bus_threads_started(crewai_event_bus)]))
"""


def test_a_fork_server_builds_crewais_flow_definitions_and_its_children_start_the_event_bus_ahead():
    # What a first kickoff builds per class is built once in the server; the bus's threads, which a fork would not
    # carry over, are started by each child before its run comes.
    assert last_line_of(WARM_UP_CHECK) == [False, True, False, True]


RELAY_CHECK = """
import json, os, tempfile
from crewai.events import crewai_event_bus
from crewd_runner import crewai_adapter, crewai_events
from crewd_runner.protocol import Emitter
from crews import echo_crew
import logging

def unreadable(_source, _event):
    raise ValueError("no crewd form")

said = []
class Said(logging.Handler):
    def emit(self, record):
        said.append(record.getMessage())
logging.getLogger("crewd_runner").addHandler(Said())

crewai_events.on_task_started = unreadable
out = tempfile.TemporaryFile()
outcome = crewai_adapter.run_crew(echo_crew, {"input": {"topic": "bees"}}, Emitter(os.dup(out.fileno())))
out.seek(0)
types = [json.loads(line)["type"] for line in out.read().decode().splitlines()]
print(json.dumps([outcome.event_type, types, "emit" in vars(crewai_event_bus), said]))
"""


def test_an_event_crewd_cannot_read_is_left_out_without_breaking_the_crew_and_the_bus_is_left_as_it_was():
    outcome, types, still_wrapped, said = last_line_of(RELAY_CHECK)
    assert outcome == "run.completed"
    assert "task.started" not in types
    assert types.count("task.completed") == 1 and "agent.action" in types
    assert still_wrapped is False
    # Left out, not silently: the run's log says which events and why (a `log` event in a run).
    assert said == [
        "crewd left out CrewAI's TaskStartedEvent events, which it cannot read: ValueError('no crewd form')"
    ]
