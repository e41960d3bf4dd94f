"""Runs through the real langgraph-sdk, sync then async (CONTRACTS §14 "Runs", "Streams"), on the token graph
(runners/python/tests/projects/token_graph.py, deployed as `chat`): create, stream (values, updates,
messages-tuple), wait, join, cancel, list, and an interrupt answered with Command(resume=…)."""

import asyncio

import httpx
from langgraph_sdk import schema
from langgraph_sdk.schema import Command
from shapes import check, clients, done, status_of

MODES = ["values", "updates", "messages-tuple"]


def question(tokens: int, **extra) -> dict:
    return {"messages": [{"role": "user", "content": "hi"}], "tokens": tokens, **extra}


def expect_status(status: int, call) -> None:
    try:
        call()
    except httpx.HTTPStatusError as error:
        assert status_of(error) == status, (
            f"expected {status}, got {status_of(error)}: {error.response.text}"
        )
        assert "detail" in error.response.json(), error.response.text
        return
    raise AssertionError(f"expected {status}, got a success")


def check_stream(parts: list, words: int) -> str:
    """The parts of one run streamed in MODES; answers the run's id (from the metadata event)."""
    events = [part.event for part in parts]
    assert events[0] == "metadata", events
    assert "error" not in events, parts
    assert {"values", "updates", "messages"} <= set(events), events
    tokens = [part.data[0]["content"] for part in parts if part.event == "messages"]
    assert "".join(tokens) == " ".join(f"w{i}" for i in range(words)), tokens
    [chunk, meta] = next(part.data for part in parts if part.event == "messages")
    assert (
        chunk["type"] in ("AIMessageChunk", "ai") and meta["langgraph_node"] == "chat"
    ), (chunk, meta)
    nodes = [next(iter(part.data)) for part in parts if part.event == "updates"]
    assert nodes[:2] == ["chat", "notes"], nodes
    last = [part.data for part in parts if part.event == "values"][-1]
    assert [m["content"] for m in last["messages"]][-1] == " ".join(
        f"w{i}" for i in range(words)
    ), last
    return parts[0].data["run_id"]


def interrupt_of(parts: list) -> dict:
    found = [
        part.data["__interrupt__"]
        for part in parts
        if part.event == "updates" and "__interrupt__" in part.data
    ]
    assert found, [part.event for part in parts]
    return found[0][0]


def sync_part(client) -> dict:
    thread = client.threads.create()["thread_id"]
    streamed = list(
        client.runs.stream(thread, "chat", input=question(3), stream_mode=MODES)
    )
    streamed_id = check_stream(streamed, 3)

    waited = client.runs.wait(thread, "chat", input=question(2))
    assert [m["content"] for m in waited["messages"]] == [
        "hi",
        "w0 w1 w2",
        "hi",
        "w0 w1",
    ], waited

    created = client.runs.create(
        thread, "chat", input=question(2), metadata={"purpose": "sdk"}
    )
    check(created, schema.Run)
    assert created["thread_id"] == thread and created["metadata"]["purpose"] == "sdk", (
        created
    )
    joined = client.runs.join(thread, created["run_id"])
    assert joined["answers"] == 3, joined
    got = client.runs.get(thread, created["run_id"])
    check(got, schema.Run)
    assert got["status"] == "success", got

    slow = client.runs.create(thread, "chat", input=question(50, pause=0.2))
    # A state update waits for no run: a busy thread is 409, as on the official server.
    expect_status(409, lambda: client.threads.update_state(thread, {"tokens": 1}))
    # As the official server answers a wait for the run it canceled.
    assert client.runs.cancel(thread, slow["run_id"], wait=True) == {}
    assert client.runs.get(thread, slow["run_id"])["status"] == "interrupted"
    # A run already over: 404 for either action, as on the official server, and it stays.
    expect_status(404, lambda: client.runs.cancel(thread, created["run_id"]))
    expect_status(
        404,
        lambda: client.runs.cancel(thread, created["run_id"], action="rollback"),
    )
    assert client.runs.get(thread, created["run_id"])["status"] == "success"
    # Canceled in bulk, runs already over are skipped, and stay.
    client.runs.cancel_many(
        thread_id=thread, run_ids=[created["run_id"], slow["run_id"]], action="rollback"
    )
    assert client.runs.get(thread, created["run_id"])["status"] == "success"

    listed = client.runs.list(thread)
    check(listed, schema.Run)
    ids = [run["run_id"] for run in listed]
    assert ids[0] == slow["run_id"] and set(ids) >= {streamed_id, created["run_id"]}, (
        ids
    )
    assert [
        run["run_id"] for run in client.runs.list(thread, status="interrupted")
    ] == [slow["run_id"]]

    paused = client.threads.create()["thread_id"]
    asked = list(
        client.runs.stream(
            paused, "chat", input=question(1, ask=True), stream_mode="updates"
        )
    )
    assert interrupt_of(asked)["value"] == {"question": "Send this answer?"}, asked
    assert client.threads.get(paused)["status"] == "interrupted"
    state = client.threads.get_state(paused)
    check(state, schema.ThreadState)
    assert state["next"] == ["review"], state["next"]
    [task] = state["tasks"]
    assert task["name"] == "review" and task["interrupts"] == state["interrupts"], task
    assert task["interrupts"][0]["value"] == {"question": "Send this answer?"}, task
    resumed = client.runs.wait(paused, "chat", command=Command(resume="yes"))
    assert resumed["approved"] == "yes", resumed
    assert client.threads.get(paused)["status"] == "idle"
    after = client.threads.get_state(paused)
    assert after["next"] == [] and after["tasks"] == [], after
    expect_status(
        400, lambda: client.runs.wait(paused, "chat", command=Command(resume="again"))
    )
    return {
        "thread": thread,
        "streamed": streamed_id,
        "canceled": slow["run_id"],
        "paused": paused,
    }


async def async_part(client) -> dict:
    thread = (await client.threads.create())["thread_id"]
    streamed = [
        part
        async for part in client.runs.stream(
            thread, "chat", input=question(2), stream_mode=MODES
        )
    ]
    streamed_id = check_stream(streamed, 2)

    waited = await client.runs.wait(thread, "chat", input=question(1))
    assert waited["messages"][-1]["content"] == "w0", waited
    created = await client.runs.create(thread, "chat", input=question(1))
    check(created, schema.Run)
    assert (await client.runs.join(thread, created["run_id"]))["answers"] == 3

    slow = await client.runs.create(thread, "chat", input=question(50, pause=0.2))
    await client.runs.cancel(thread, slow["run_id"], wait=True)
    assert (await client.runs.get(thread, slow["run_id"]))["status"] == "interrupted"
    listed = await client.runs.list(thread, limit=10)
    check(listed, schema.Run)
    assert len(listed) == 4 and listed[0]["run_id"] == slow["run_id"], listed

    paused = (await client.threads.create())["thread_id"]
    asked = [
        part
        async for part in client.runs.stream(
            paused, "chat", input=question(1, ask=True), stream_mode="updates"
        )
    ]
    assert interrupt_of(asked)["value"] == {"question": "Send this answer?"}, asked
    resumed = [
        part
        async for part in client.runs.stream(
            paused, "chat", command=Command(resume="ok"), stream_mode="values"
        )
    ]
    values = [part.data for part in resumed if part.event == "values"]
    assert values and values[-1]["approved"] == "ok", resumed
    assert (await client.threads.get(paused))["status"] == "idle"
    return {"async_thread": thread, "async_streamed": streamed_id}


def main() -> None:
    sync_client, async_client = clients()
    result = sync_part(sync_client)
    result.update(asyncio.run(async_part(async_client)))
    done(result)


main()
