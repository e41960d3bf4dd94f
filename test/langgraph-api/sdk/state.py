"""A graph thread's state updated through the real langgraph-sdk, sync then async (CONTRACTS §14 "State";
`POST /threads/{id}/state` as `graph.update_state` does it), and its history's `next`.

The agent (examples/langgraph-agent) stops at its `approval` interrupt; the update then runs the graph's own
reducers. The same script runs against `langgraph dev` (OFFICIAL=1) to compare: crewd keeps one checkpoint per run
and update, the official server one per step, so only the newest states are compared.
"""

import asyncio
import os

import httpx
from langgraph_sdk import schema
from shapes import check, clients, done, status_of

OFFICIAL = os.environ.get("OFFICIAL") == "1"
QUESTION = {"question": "How many words?"}


def paused_thread(client) -> str:
    thread = client.threads.create()["thread_id"]
    values = client.runs.wait(thread, "agent", input=QUESTION)
    assert "__interrupt__" in values, values
    return thread


def sync_part(client) -> dict:
    thread = paused_thread(client)
    before = client.threads.get_state(thread)
    assert before["next"] == ["approval"] and before["interrupts"], before
    messages = len(before["values"]["messages"])

    # No as_node: LangGraph takes the node that ran last; add_messages appends, the other keys are replaced.
    extra = {"role": "user", "content": "One more thing."}
    written = client.threads.update_state(
        thread, {"question": "Changed?", "messages": [extra]}
    )
    # The official server answers LangGraph's config: thread_id, checkpoint_ns, checkpoint_id.
    assert written["checkpoint"]["thread_id"] == thread, written
    assert written["checkpoint"]["checkpoint_ns"] == "", written
    new_id = written["checkpoint"]["checkpoint_id"]
    assert new_id != before["checkpoint"]["checkpoint_id"], written
    # The fields the official server sends beside it (deprecated, but read by older clients).
    assert (
        written["checkpoint_id"] == new_id
        and written["configurable"] == written["checkpoint"]
    ), written

    after = client.threads.get_state(thread)
    check(after, schema.ThreadState)
    assert after["checkpoint"]["checkpoint_id"] == new_id, (after, written)
    assert after["values"]["question"] == "Changed?", after["values"]
    assert len(after["values"]["messages"]) == messages + 1, after["values"]
    assert after["values"]["messages"][-1]["content"] == "One more thing.", after
    # The node still to run is still next; its interrupt will be asked again when it runs.
    assert after["next"] == ["approval"] and after["interrupts"] == [], after
    assert after["metadata"]["source"] == "update", after["metadata"]
    # No run of the graph made it.
    assert after["metadata"].get("run_id") is None, after["metadata"]
    assert (
        after["parent_checkpoint"]["checkpoint_id"]
        == before["checkpoint"]["checkpoint_id"]
    ), (after, before)
    assert client.threads.get(thread)["status"] == "interrupted"

    # The history: the update first, then the state it updated, with its own `next` (part of LangGraph's history).
    history = client.threads.get_history(thread, limit=2)
    check(history, schema.ThreadState)
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == [
        new_id,
        before["checkpoint"]["checkpoint_id"],
    ], history
    assert [h["next"] for h in history] == [["approval"], ["approval"]], history
    # The state it updated shows the interrupt its step raised, with its task; the update's has none.
    assert history[0]["interrupts"] == [], history[0]
    assert history[1]["interrupts"] == before["interrupts"], history[1]
    assert history[1]["tasks"][0]["interrupts"] == before["interrupts"], history[1]
    earlier = client.threads.get_state(
        thread, checkpoint_id=before["checkpoint"]["checkpoint_id"]
    )
    assert earlier["next"] == ["approval"], earlier
    assert earlier["interrupts"] == before["interrupts"], earlier

    # as_node: the update counts as that node's output, so the graph goes on after it.
    client.threads.update_state(thread, {"answers": 5}, as_node="approval")
    ended = client.threads.get_state(thread)
    assert ended["next"] == [] and ended["values"]["answers"] == 5, ended
    assert client.threads.get(thread)["status"] == "idle"

    # LangGraph's refusal is the client's error, as the official server answers it.
    try:
        client.threads.update_state(thread, {"answers": 1}, as_node="nope")
    except httpx.HTTPStatusError as error:
        assert status_of(error) == 400, error.response.text
        assert "nope" in error.response.json()["detail"], error.response.text
    else:
        raise AssertionError("an unknown as_node was taken")

    # The official server has no run for an update: the thread's runs are its graph's.
    runs = client.runs.list(thread)
    assert len(runs) == 1, runs
    # A page reads on past the updates (three, the refused one too, all newer than the graph's run).
    assert [r["run_id"] for r in client.runs.list(thread, limit=1)] == [
        runs[0]["run_id"]
    ]
    return {
        "thread": thread,
        "history_next": [
            h["next"] for h in client.threads.get_history(thread, limit=10)
        ],
    }


async def async_part(client) -> dict:
    thread = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread, "agent", input=QUESTION)
    await client.threads.update_state(thread, {"question": "Async?"})
    state = await client.threads.get_state(thread)
    assert state["values"]["question"] == "Async?" and state["next"] == ["approval"]
    # A refused update leaves the thread as it was: still interrupted, its interrupt still to be resumed.
    try:
        await client.threads.update_state(thread, {"answers": 1}, as_node="nope")
    except httpx.HTTPStatusError as error:
        assert status_of(error) == 400, error.response.text
    else:
        raise AssertionError("an unknown as_node was taken")
    assert (await client.threads.get(thread))["status"] == "interrupted"
    # The interrupt is asked again and answered: the graph runs on from the updated state.
    values = await client.runs.wait(
        thread, "agent", command={"resume": {"approved": True}}
    )
    assert values["approved"] is True and values["question"] == "Async?", values
    assert (await client.threads.get(thread))["status"] == "idle"
    return {"async_thread": thread}


def main() -> None:
    sync_client, async_client = clients()
    result = sync_part(sync_client)
    result.update(asyncio.run(async_part(async_client)))
    done(result)


main()
