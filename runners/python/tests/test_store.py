"""A graph's store (crewd_store over store_channel): the runner started as crewd starts it, with its standard input
kept open after the request; the test answers the runner's `store.call` lines as crewd does, from LangGraph's own
InMemoryStore, so that what the graph sees is what a real BaseStore would give it."""

import json
import signal
import subprocess
import sys

import pytest
from langgraph.store.memory import InMemoryStore

from crewd_runner.crewd_store import CrewdStore
from crewd_runner.store_channel import CallFailed

from conftest import parse_protocol_line, request, runner_env
from forkserver_support import Connection, socket_path, start_server  # noqa: F401 (socket_path: a fixture)


def item_json(item):
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
    }


def answer(store, call):
    """crewd's side of one call: `{"result": …}` or `{"error": …}`."""
    op, namespace = call["op"], tuple(call.get("namespace") or ())
    if op == "get":
        found = store.get(namespace, call["key"])
        return {"result": item_json(found) if found else None}
    if op == "put":
        store.put(namespace, call["key"], call["value"])
        return {"result": None}
    if op == "delete":
        store.delete(namespace, call["key"])
        return {"result": None}
    if op == "search":
        if call.get("query"):
            return {"error": "query: semantic search needs an embedding index, and crewd's store has none"}
        prefix = tuple(call["namespace_prefix"])
        found = store.search(prefix, filter=call.get("filter"), limit=call["limit"], offset=call["offset"])
        return {"result": [{**item_json(item), "score": None} for item in found]}
    if op == "list_namespaces":
        found = store.list_namespaces(
            prefix=tuple(call["prefix"]) if call.get("prefix") else None,
            suffix=tuple(call["suffix"]) if call.get("suffix") else None,
            max_depth=call.get("max_depth"),
        )
        return {"result": [list(namespace) for namespace in found]}
    return {"error": f"unknown op {op}"}


def run_with_store(projects, store, run_input, answer_calls=True):
    """The graph's run; each store call answered from `store` (or, with answer_calls False, standard input closed
    after the request, as for a runner crewd keeps no channel to). The events and the calls seen."""
    process = subprocess.Popen(
        [sys.executable, "-m", "crewd_runner", "--graph", "store_graph.py:graph"],
        cwd=projects,
        env=runner_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    process.stdin.write(json.dumps(request(run_input)) + "\n")
    process.stdin.flush()
    if not answer_calls:
        process.stdin.close()
    events, calls = [], []
    for line in process.stdout:
        event = parse_protocol_line(line)
        events.append(event)
        if event["type"] == "store.call" and answer_calls:
            calls.append(event["data"])
            reply = {"answer": {"id": event["data"]["id"], **answer(store, event["data"])}}
            process.stdin.write(json.dumps(reply) + "\n")
            process.stdin.flush()
    if answer_calls:
        process.stdin.close()
    process.wait(timeout=60)
    process.stderr.close()
    process.stdout.close()
    return events, calls


def test_a_node_writes_and_reads_through_the_store_crewd_answers(projects):
    store = InMemoryStore()
    store.put(("shared",), "greeting", {"text": "put through the API"})
    events, calls = run_with_store(projects, store, {"user": "ada"})
    assert events[-1]["type"] == "run.completed", events[-1]
    output = events[-1]["data"]["output"]
    assert output["greeting"] == {"text": "put through the API"}
    assert output["notes"] == ["first"]
    assert output["namespaces"] == [["notes", "ada"]]
    assert store.get(("notes", "ada"), "first").value == {"text": "hello from ada"}
    assert [call["op"] for call in calls] == ["put", "get", "search", "list_namespaces"]
    # No call names an organization: crewd runs each for the run's own.
    assert all(
        set(call)
        <= {
            "id",
            "op",
            "namespace",
            "key",
            "value",
            "namespace_prefix",
            "filter",
            "limit",
            "offset",
            "prefix",
            "suffix",
            "max_depth",
            "index",
            "query",
        }
        for call in calls
    )


def test_without_a_channel_a_store_call_fails_the_run_saying_why(projects):
    events, _ = run_with_store(projects, InMemoryStore(), {"user": "ada"}, answer_calls=False)
    assert events[-1]["type"] == "run.failed"
    assert "crewd keeps no channel open to this run" in events[-1]["data"]["error"]


def run_in_server(socket_path, projects, store, run_input):
    """One run asked of a fork server or a worker at `socket_path`, its store calls answered on the connection as
    crewd answers them: (the events, the server's last words)."""
    connection = Connection(socket_path, projects, request(run_input))
    events, buffered = [], b""
    while True:
        data = connection.sock.recv(65536)
        assert data, f"the connection closed without the server's last words: {buffered!r}"
        buffered += data
        if b"\0" in buffered:
            output, _, final = buffered.partition(b"\0")
            lines, buffered = output.split(b"\n"), b""
        else:
            *lines, buffered = buffered.split(b"\n")
            final = None
        for line in filter(None, lines):
            event = parse_protocol_line(line)
            events.append(event)
            if event["type"] == "store.call":
                reply = {"answer": {"id": event["data"]["id"], **answer(store, event["data"])}}
                connection.sock.sendall(json.dumps(reply).encode() + b"\n")
        if final is not None:
            while more := connection.sock.recv(65536):
                final += more
            connection.sock.close()
            return events, json.loads(final)


@pytest.mark.parametrize("module", ["crewd_runner.forkserver", "crewd_runner.worker"])
def test_a_run_in_a_fork_server_or_a_worker_gets_its_answers_on_its_connection(projects, socket_path, module):
    server = start_server("graph", "store_graph.py:graph", socket_path, module=module)
    try:
        # The second run comes after the first one's, to a child forked ahead; its greeting's answer is more than a
        # pipe holds, so the server passes it on as the child reads.
        for user, text in (("ada", "put through the API"), ("grace", "long " * 100_000)):
            store = InMemoryStore()
            store.put(("shared",), "greeting", {"text": text})
            events, final = run_in_server(socket_path, projects, store, {"user": user})
            assert final == {"exit_code": 0}
            assert events[-1]["type"] == "run.completed", events[-1]
            assert events[-1]["data"]["output"]["greeting"] == {"text": text}
            assert store.get(("notes", user), "first").value == {"text": f"hello from {user}"}
    finally:
        server.terminate()
        server.wait(10)


def test_a_worker_run_canceled_while_its_store_call_waits_ends_and_the_worker_goes_on(projects, socket_path):
    """crewd answers nothing once a run ended: a canceled run's waiting call fails, so its thread stops (a wait in a
    lock would take no exception, and a run that does not stop ends its whole worker)."""
    server = start_server("graph", "store_graph.py:graph", socket_path, module="crewd_runner.worker")
    try:
        connection = Connection(socket_path, projects, request({"user": "ada"}))
        connection.sock.settimeout(60)
        received = b""
        while b'"store.call"' not in received:
            received += connection.sock.recv(65536)
        connection.signal(signal.SIGTERM)
        _, final = connection.finish()
        assert final == {"signal": signal.SIGTERM}
        store = InMemoryStore()
        events, final = run_in_server(socket_path, projects, store, {"user": "grace"})
        assert final == {"exit_code": 0}
        assert events[-1]["type"] == "run.completed", events[-1]
    finally:
        server.terminate()
        server.wait(10)


def test_the_store_turns_each_op_of_a_batch_into_its_call():
    """CrewdStore alone, its calls answered as crewd answers them: deletes, namespaces by suffix and depth, and
    crewd's refusals raised to the graph."""
    memory = InMemoryStore()

    def call(fields):
        answered = answer(memory, fields)
        if "error" in answered:
            raise CallFailed(answered["error"])
        return answered["result"]

    store = CrewdStore(call)
    store.put(("users", "ada", "prefs"), "theme", {"dark": True})
    store.put(("users", "grace", "prefs"), "theme", {"dark": False})
    assert store.get(("users", "ada", "prefs"), "theme").value == {"dark": True}
    assert store.list_namespaces(suffix=("prefs",), max_depth=2) == [("users", "ada"), ("users", "grace")]
    assert [item.key for item in store.search(("users",), filter={"dark": False})] == ["theme"]
    store.delete(("users", "ada", "prefs"), "theme")
    assert store.get(("users", "ada", "prefs"), "theme") is None
    with pytest.raises(CallFailed, match="embedding index"):
        store.search(("users",), query="dark themes")
    with pytest.raises(ValueError, match="no '\\*'"):
        store.list_namespaces(prefix=("users", "*"))
