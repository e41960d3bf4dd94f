"""A graph's store (crewd_store over store_channel): the runner started as crewd starts it, with its standard input
kept open after the request; the test answers the runner's `store.call` lines as crewd does, from LangGraph's own
InMemoryStore, so that what the graph sees is what a real BaseStore would give it."""

import json
import subprocess
import sys

from langgraph.store.memory import InMemoryStore

from conftest import parse_protocol_line, request, runner_env


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
        found = store.list_namespaces(prefix=tuple(call["prefix"]) if call.get("prefix") else None)
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
