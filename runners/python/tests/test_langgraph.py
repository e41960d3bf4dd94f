"""LangGraph graphs through the runner: stream events, final state, interrupts, and a thread over three runs."""

import base64

import ormsgpack

from conftest import request, run_python, run_runner, runner_env

AGENT_GRAPH = "./src/agent/graph.py:graph"


def test_a_graph_streams_node_updates_and_completes_with_its_final_state(projects):
    # A new interpreter's run, as crewd starts one without a fork server (the others are forked from the zygote).
    result = run_runner("graph", "echo_graph.py:graph", projects, request({"text": "hello"}), fresh=True)

    assert result.returncode == 0, result.stderr
    assert result.of_type("node.completed") == [{"node": "echo", "update": {"echo": "hello"}}]
    assert result.last == {"type": "run.completed", "data": {"output": {"text": "hello", "echo": "hello"}}}


def test_outside_a_thread_no_checkpoint_or_values_are_returned(projects):
    result = run_runner("graph", "echo_graph.py:graph", projects, request({"text": "x"}))

    assert set(result.last["data"]) == {"output"}


def run_agent(examples, thread, run_input=None, command=None):
    result = run_runner("graph", AGENT_GRAPH, examples / "langgraph-agent", request(run_input, thread, command))
    assert result.returncode == 0, result.stderr
    return result


def next_thread(previous):
    data = previous.last["data"]
    return {"thread_id": "thr_agent", "values": data["values"], "checkpoint": data["checkpoint"]}


def test_a_thread_runs_interrupts_resumes_and_carries_its_state_over_three_runs(examples):
    first = run_agent(
        examples, {"thread_id": "thr_agent", "values": None, "checkpoint": None}, {"question": "how many words"}
    )

    assert [data["node"] for data in first.of_type("node.completed")] == ["ask", "model", "tools", "model"]
    assert first.of_type("custom") == [{"step": "model", "tool_calls": 1}, {"step": "model", "tool_calls": 0}]
    interrupted = first.last
    assert interrupted["type"] == "run.interrupted"
    assert not first.of_type("run.completed")
    [pending] = interrupted["data"]["interrupts"]
    assert pending["value"] == {"question": "Send this answer?", "answer": "Your message has 3 words."}
    assert isinstance(pending["id"], str) and pending["id"]
    messages = interrupted["data"]["values"]["messages"]
    assert [message["type"] for message in messages] == ["human", "ai", "tool", "ai"]
    assert messages[2]["content"] == "3"
    assert interrupted["data"]["checkpoint"]["format"] == "crewd.langgraph.v1"

    second = run_agent(examples, next_thread(first), command={"resume": {"approved": True}})

    assert [data["node"] for data in second.of_type("node.completed")] == ["approval"]
    completed = second.last
    assert completed["type"] == "run.completed"
    assert completed["data"]["output"]["approved"] is True
    assert completed["data"]["output"]["answers"] == 1
    assert completed["data"]["values"] == completed["data"]["output"]
    assert len(completed["data"]["values"]["messages"]) == 4

    third = run_agent(examples, next_thread(second), {"question": "and now these five words"})

    assert third.last["type"] == "run.interrupted"
    values = third.last["data"]["values"]
    assert len(values["messages"]) == 8
    assert values["messages"][4]["content"] == "and now these five words"
    assert values["answers"] == 1
    assert third.last["data"]["interrupts"][0]["value"]["answer"] == "Your message has 5 words."


def test_a_command_update_changes_the_state_as_the_graph_resumes(examples):
    first = run_agent(examples, {"thread_id": "thr_agent", "values": None, "checkpoint": None}, {"question": "one two"})

    resumed = run_agent(
        examples, next_thread(first), command={"resume": {"approved": False}, "update": {"answers": 10}}
    )

    assert resumed.last["type"] == "run.completed"
    assert resumed.last["data"]["output"]["approved"] is False
    assert resumed.last["data"]["output"]["answers"] == 10


def test_a_checkpoint_that_crewd_did_not_write_fails_the_run(projects):
    thread = {"thread_id": "thr_x", "values": {}, "checkpoint": {"something": "else"}}

    result = run_runner("graph", "echo_graph.py:graph", projects, request({"text": "x"}, thread))

    assert result.last["type"] == "run.failed"
    assert result.last["data"]["error"].startswith("ValueError: The thread's checkpoint is not a LangGraph checkpoint")


def constructor_payload(module, name, argument):
    """What LangGraph's serializer writes for an object it rebuilds as `module.name(argument)`."""
    return ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb([module, name, argument])))


def typed(payload):
    return {"type": "msgpack", "data": base64.b64encode(payload).decode()}


def test_a_checkpoint_naming_a_constructor_is_refused_and_nothing_of_it_runs(projects, tmp_path):
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    # The call hides in a pending write's value, under a set (a safe type) the first time.
    call = ormsgpack.Ext(0, ormsgpack.packb(["builtins", "exec", code]))
    hidden = ormsgpack.packb({"v": ormsgpack.Ext(0, ormsgpack.packb(["builtins", "set", [call]]))})
    for checkpoint, write in ((constructor_payload("builtins", "exec", code), None), (None, hidden)):
        entry = {
            "ns": "",
            "parent_id": None,
            "checkpoint": typed(checkpoint or ormsgpack.packb({"channel_versions": {}})),
            "metadata": typed(ormsgpack.packb({})),
            "writes": [{"task_id": "t", "channel": "text", "value": typed(write)}] if write else [],
        }
        checkpoint_value = {"format": "crewd.langgraph.v1", "checkpoints": [entry]}
        thread = {"thread_id": "thr_x", "values": {}, "checkpoint": checkpoint_value}

        result = run_runner("graph", "echo_graph.py:graph", projects, request({"text": "x"}, thread))

        assert result.last["type"] == "run.failed"
        assert result.last["data"]["error"].startswith(
            "CheckpointRefused: The thread's checkpoint names builtins.exec to construct, which crewd does not"
        )
        assert not marker.exists()


def test_a_thread_with_values_but_no_checkpoint_starts_the_graph_from_those_values(projects):
    thread = {"thread_id": "thr_new", "values": {"text": "from the thread", "echo": "old"}, "checkpoint": None}

    result = run_runner("graph", "echo_graph.py:graph", projects, request({}, thread))

    assert result.last["data"]["output"] == {"text": "from the thread", "echo": "from the thread"}
    assert result.last["data"]["values"] == result.last["data"]["output"]


def test_the_run_input_wins_over_the_thread_values_it_starts_from(projects):
    thread = {"thread_id": "thr_new", "values": {"text": "from the thread"}, "checkpoint": None}

    result = run_runner("graph", "echo_graph.py:graph", projects, request({"text": "from the run"}, thread))

    assert result.last["data"]["output"] == {"text": "from the run", "echo": "from the run"}


def test_an_interrupt_inside_a_subgraph_resumes_where_it_stopped(projects, tmp_path):
    env = {"SUBGRAPH_LOG": str(tmp_path / "subgraph.log")}
    first = run_runner(
        "graph",
        "subgraph_graph.py:graph",
        projects,
        request({}, {"thread_id": "thr_sub", "values": None, "checkpoint": None}),
        env,
    )
    assert first.last["type"] == "run.interrupted"
    assert first.last["data"]["interrupts"][0]["value"] == "inner question"
    thread = {
        "thread_id": "thr_sub",
        "values": first.last["data"]["values"],
        "checkpoint": first.last["data"]["checkpoint"],
    }

    second = run_runner("graph", "subgraph_graph.py:graph", projects, request({}, thread, {"resume": "yes"}), env)

    assert second.last["type"] == "run.completed", second.events
    assert second.last["data"]["output"]["steps"] == ["inner-before", "inner-answer:yes", "outer-finish"]
    # The subgraph went on from its own checkpoint: its first node did not run again.
    assert (tmp_path / "subgraph.log").read_text() == "before ran\n"


def test_an_interrupt_outside_a_thread_reports_the_interrupt_without_state(examples):
    result = run_runner("graph", AGENT_GRAPH, examples / "langgraph-agent", request({"question": "one two three"}))

    assert result.last["type"] == "run.interrupted"
    assert set(result.last["data"]) == {"interrupts"}
    assert result.last["data"]["interrupts"][0]["value"]["answer"] == "Your message has 3 words."


def test_the_fork_servers_warm_up_imports_crewds_store_which_runs_use(tmp_path):
    """A fork server calls warm_up once: what it imports, its forked children do not import again for each run."""
    code = (
        "import sys\n"
        "from crewd_runner import langgraph_adapter\n"
        "before = 'crewd_runner.crewd_store' in sys.modules\n"
        "langgraph_adapter.warm_up()\n"
        "print(before, 'crewd_runner.crewd_store' in sys.modules)\n"
    )
    done = run_python(["-c", code], tmp_path, runner_env())

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
