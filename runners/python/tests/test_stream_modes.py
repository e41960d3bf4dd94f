"""Runs of crewd's LangGraph API: the stream modes the client asked for, as `langgraph.chunk` events."""

import json
import subprocess
import sys

from conftest import EXAMPLES, request, run_runner, runner_env

TOKEN_GRAPH = "token_graph.py:graph"
ALL_MODES = ["values", "updates", "custom", "messages-tuple", "messages", "debug", "tasks", "checkpoints"]


def streamed(run_input, modes, thread=None, command=None, **options):
    """A request as crewd's LangGraph API makes it: the stream request rides in the input."""
    stream_request = {"stream_mode": modes, **options}
    return request({**(run_input or {}), "__langgraph__": stream_request}, thread, command)


def chunks(result, mode=None):
    found = result.of_type("langgraph.chunk")
    return [chunk for chunk in found if mode is None or chunk["mode"] == mode]


def question(tokens=3, **extra):
    return {"messages": [{"role": "user", "content": "hi"}], "tokens": tokens, **extra}


def test_each_mode_asked_for_streams_its_chunks_and_nothing_else(projects):
    result = run_runner("graph", TOKEN_GRAPH, projects, streamed(question(), ALL_MODES))

    assert result.returncode == 0, result.stderr
    assert {chunk["mode"] for chunk in chunks(result)} == {
        *ALL_MODES,
        "messages/metadata",
        "messages/partial",
    } - {"messages"}
    tokens = chunks(result, "messages-tuple")
    assert [message["content"] for message, _ in (chunk["data"] for chunk in tokens)] == ["w0", " ", "w1", " ", "w2"]
    assert all(message["type"] == "AIMessageChunk" for message, _ in (chunk["data"] for chunk in tokens))
    assert {metadata["langgraph_node"] for _, metadata in (chunk["data"] for chunk in tokens)} == {"chat"}
    partial = [chunk["data"][0]["content"] for chunk in chunks(result, "messages/partial")]
    assert partial == ["w0", "w0 ", "w0 w1", "w0 w1 ", "w0 w1 w2"]
    assert len(chunks(result, "messages/metadata")) == 1
    assert [chunk["data"] for chunk in chunks(result, "custom")] == [{"step": "chat", "tokens": 3}]
    assert [list(chunk["data"]) for chunk in chunks(result, "updates")] == [["chat"], ["notes"], ["review"]]
    final = chunks(result, "values")[-1]["data"]
    assert [message["content"] for message in final["messages"]] == ["hi", "w0 w1 w2"]
    assert final["answers"] == 1
    assert not result.of_type("node.completed"), "a run of the LangGraph API streams chunks instead"
    assert result.last["type"] == "run.completed"


def test_only_the_modes_asked_for_and_subgraph_chunks_only_with_subgraphs(projects):
    plain = run_runner("graph", TOKEN_GRAPH, projects, streamed(question(), ["updates"]))
    nested = run_runner("graph", TOKEN_GRAPH, projects, streamed(question(), ["updates"], stream_subgraphs=True))

    assert {chunk["mode"] for chunk in chunks(plain)} == {"updates"}
    assert all(chunk["ns"] == [] for chunk in chunks(plain))
    inner = [chunk for chunk in chunks(nested) if chunk["ns"]]
    assert [chunk["data"] for chunk in inner] == [{"count": {"answers": 1}}]
    assert inner[0]["ns"][0].startswith("notes:")


def test_tokens_reach_the_stream_while_the_model_still_produces_them(projects):
    """The first token's line is read while the run still goes on: the model pauses between tokens, far longer in
    all than a run's end takes."""
    process = subprocess.Popen(
        [sys.executable, "-m", "crewd_runner", "--graph", TOKEN_GRAPH],
        cwd=projects,
        env=runner_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(streamed(question(tokens=20, pause=0.2), ["messages-tuple"])))
    process.stdin.close()
    try:
        for line in process.stdout:
            event = json.loads(line)
            if event["type"] == "langgraph.chunk":
                assert event["data"]["data"][0]["content"] == "w0"
                assert process.poll() is None, "the run was over before its first token was streamed"
                break
        else:
            raise AssertionError("no token was streamed")
    finally:
        process.kill()
        process.wait()


def test_interrupt_before_stops_the_run_and_a_run_without_input_goes_on_from_the_checkpoint(projects):
    thread = {"thread_id": "thr_stop", "values": None, "checkpoint": None}
    first = run_runner(
        "graph", TOKEN_GRAPH, projects, streamed(question(), ["updates"], thread, interrupt_before=["notes"])
    )

    assert first.last["type"] == "run.interrupted"
    assert first.last["data"]["interrupts"] == []
    assert [chunk["data"] for chunk in chunks(first)][1:] == [{"__interrupt__": []}]

    thread = {
        "thread_id": "thr_stop",
        "values": first.last["data"]["values"],
        "checkpoint": first.last["data"]["checkpoint"],
    }
    second = run_runner("graph", TOKEN_GRAPH, projects, streamed({}, ["updates"], thread, null_input=True))

    assert second.last["type"] == "run.completed", second.stderr
    assert [list(chunk["data"]) for chunk in chunks(second)] == [["notes"], ["review"]]
    assert [message["content"] for message in second.last["data"]["output"]["messages"]] == ["hi", "w0 w1 w2"]


def test_an_interrupt_is_streamed_and_answered_with_a_resume_command(projects):
    thread = {"thread_id": "thr_ask", "values": None, "checkpoint": None}
    first = run_runner("graph", TOKEN_GRAPH, projects, streamed(question(ask=True), ["updates", "values"], thread))

    assert first.last["type"] == "run.interrupted"
    [pending] = first.last["data"]["interrupts"]
    assert pending["value"] == {"question": "Send this answer?"}
    updates = [chunk["data"] for chunk in chunks(first, "updates")]
    [[streamed_interrupt]] = [update["__interrupt__"] for update in updates if "__interrupt__" in update]
    assert (streamed_interrupt["value"], streamed_interrupt["id"]) == (pending["value"], pending["id"])

    thread = {
        "thread_id": "thr_ask",
        "values": first.last["data"]["values"],
        "checkpoint": first.last["data"]["checkpoint"],
    }
    second = run_runner("graph", TOKEN_GRAPH, projects, streamed({}, ["values"], thread, {"resume": "yes"}))

    assert second.last["type"] == "run.completed", second.stderr
    assert second.last["data"]["output"]["approved"] == "yes"
    assert chunks(second, "values")[-1]["data"]["approved"] == "yes"


def test_the_config_and_context_reach_the_graph_and_the_events_mode_streams_langchain_events(projects):
    result = run_runner(
        "graph",
        TOKEN_GRAPH,
        projects,
        streamed(question(tokens=2), ["events", "values"], config={"tags": ["from-client"]}),
    )

    assert result.returncode == 0, result.stderr
    events = [chunk["data"] for chunk in chunks(result, "events")]
    assert [event["data"]["chunk"]["content"] for event in events if event["event"] == "on_chat_model_stream"] == [
        "w0",
        " ",
        "w1",
    ]
    assert "from-client" in events[0]["tags"]
    assert chunks(result, "values")[-1]["data"]["messages"][-1]["content"] == "w0 w1"


def test_a_crew_streams_each_finished_task_as_an_update_and_its_outputs_so_far_as_values():
    result = run_runner(
        "crew",
        "research.crew:Research",
        EXAMPLES / "crewai-research",
        streamed({"topic": "solar batteries"}, ["updates", "values", "custom"]),
    )

    assert result.returncode == 0, result.stderr
    updates = [chunk["data"] for chunk in chunks(result, "updates")]
    assert [list(update) for update in updates] == [["research_task"], ["reporting_task"]]
    values = [chunk["data"] for chunk in chunks(result, "values")]
    assert [sorted(value) for value in values] == [["research_task"], ["reporting_task", "research_task"]]
    assert values[-1]["reporting_task"] == updates[-1]["reporting_task"]
    custom_types = {chunk["data"]["type"] for chunk in chunks(result, "custom")}
    assert {"task.started", "agent.action"} <= custom_types
    assert len(result.of_type("task.completed")) == 2, "crewd's own events go on as ever"
