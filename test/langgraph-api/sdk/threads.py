"""Threads through the real langgraph-sdk, sync then async (CONTRACTS §14 "Threads", "State")."""

import asyncio
import os
import uuid

import httpx
from langgraph_sdk import schema
from shapes import check, clients, done, status_of

INTERRUPTED = os.environ["INTERRUPTED_THREAD"]


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


def sync_part(client) -> dict:
    made = client.threads.create(metadata={"user": "ada"})
    check(made, schema.Thread)
    assert (
        made["status"] == "idle"
        and made["interrupts"] == {}
        and uuid.UUID(made["thread_id"])
    ), made

    chosen = str(uuid.uuid4())
    assert (
        client.threads.create(thread_id=chosen, metadata={"user": "bob"})["thread_id"]
        == chosen
    )
    expect_status(409, lambda: client.threads.create(thread_id=chosen))
    assert client.threads.create(thread_id=chosen, if_exists="do_nothing")[
        "metadata"
    ] == {"user": "bob"}

    updated = client.threads.update(chosen, metadata={"tier": "gold"})
    check(updated, schema.Thread)
    assert updated["metadata"] == {"user": "bob", "tier": "gold"}, updated
    assert [
        t["thread_id"] for t in client.threads.search(metadata={"tier": "gold"})
    ] == [chosen]
    assert client.threads.count(metadata={"user": "ada"}) == 1
    assert client.threads.count(status="interrupted") == 1

    empty = client.threads.get_state(chosen)
    check(empty, schema.ThreadState)
    assert empty["next"] == [] and empty["tasks"] == [], empty
    assert client.threads.get_history(chosen) == []
    written = client.threads.update_state(chosen, {"note": "hello"})
    assert written["checkpoint"]["thread_id"] == chosen, written
    assert client.threads.get_state(chosen)["values"] == {"note": "hello"}
    assert len(client.threads.get_history(chosen)) == 1

    copied = client.threads.copy(chosen)
    check(copied, schema.Thread)
    assert copied["thread_id"] != chosen and copied["values"] == {"note": "hello"}, (
        copied
    )

    paused = client.threads.get(INTERRUPTED)
    check(paused, schema.Thread)
    assert paused["status"] == "interrupted", paused
    [task_interrupts] = paused["interrupts"].values()
    assert task_interrupts[0]["value"]["question"] == "Send this answer?", paused

    state = client.threads.get_state(INTERRUPTED)
    check(state, schema.ThreadState)
    check(state["tasks"], schema.ThreadTask)
    check(state["checkpoint"], schema.Checkpoint)
    assert state["interrupts"][0]["value"]["question"] == "Send this answer?", state
    assert state["tasks"][0]["interrupts"] == state["interrupts"] and state["next"], (
        state
    )
    assert any(message["type"] == "ai" for message in state["values"]["messages"]), (
        state["values"]
    )
    history = client.threads.get_history(INTERRUPTED, limit=5)
    check(history, schema.ThreadState)
    assert history[0]["checkpoint"] == state["checkpoint"], history
    at = client.threads.get_state(
        INTERRUPTED, checkpoint_id=state["checkpoint"]["checkpoint_id"]
    )
    assert at["values"] == state["values"]
    # No graph has run on the thread: there is no node to update as.
    expect_status(
        422, lambda: client.threads.update_state(chosen, {"note": "x"}, as_node="ask")
    )

    client.threads.delete(copied["thread_id"])
    expect_status(404, lambda: client.threads.get(copied["thread_id"]))
    expect_status(404, lambda: client.threads.get_state(str(uuid.uuid4())))
    expect_status(
        422, lambda: client.http.post("/threads/search", json={"limit": "ten"})
    )
    return {"chosen": chosen, "made": made["thread_id"]}


async def async_part(client) -> dict:
    made = await client.threads.create(metadata={"mode": "async"})
    check(made, schema.Thread)
    found = await client.threads.search(metadata={"mode": "async"}, limit=5)
    assert [t["thread_id"] for t in found] == [made["thread_id"]], found
    state = await client.threads.get_state(made["thread_id"])
    check(state, schema.ThreadState)
    await client.threads.update(made["thread_id"], metadata={"seen": True})
    assert await client.threads.count(metadata={"seen": True}) == 1
    await client.threads.delete(made["thread_id"])
    assert await client.threads.count(metadata={"mode": "async"}) == 0
    return {"async_made": made["thread_id"]}


def main() -> None:
    sync_client, async_client = clients()
    result = sync_part(sync_client)
    result.update(asyncio.run(async_part(async_client)))
    done(result)


main()
