"""What code written against the official server expects where crewd answered otherwise, through the real
langgraph-sdk on the token graph (runners/python/tests/projects/token_graph.py, deployed as `chat`): search pages
and their `next`, the default multitask strategy, the status of a run paused at `interrupt()`, `wait` after a
breakpoint, deleting a busy thread, following a stateless run, finding a graph's threads by their metadata,
refusing a cron of a bad schedule, deleting an assistant with its threads, and states' deprecated fields. Passes
against `langgraph dev` too (OFFICIAL=1); where CONTRACTS §14 fixes crewd's answer otherwise, the check says so.

Against the official server: a folder with token_graph.py and a langgraph.json of
`{"dependencies": ["."], "graphs": {"chat": "./token_graph.py:graph"}}`, `langgraph dev --no-browser` there
(langgraph-cli[inmem], as bench/langgraph.ts installs it), then
`OFFICIAL=1 CREWD_LANGGRAPH_URL=http://127.0.0.1:2024 CREWD_API_KEY=unused python conformance.py`.
"""

import asyncio
import os
import time
import uuid

import httpx
from langgraph_sdk import schema
from shapes import check, clients, done, status_of

OFFICIAL = os.environ.get("OFFICIAL") == "1"
# Tags what this script makes, so that its searches see only its own.
TAG = str(uuid.uuid4())


def question(tokens: int, **extra) -> dict:
    return {"messages": [{"role": "user", "content": "hi"}], "tokens": tokens, **extra}


def search_pages(client) -> None:
    """`response_format="object"` pages by the server's `X-Pagination-Next`."""
    for index in range(3):
        client.assistants.create("chat", name=f"page {index}", metadata={"tag": TAG})
    seen, offset, pages = [], 0, 0
    while offset is not None:
        page = client.assistants.search(
            metadata={"tag": TAG},
            limit=2,
            offset=int(offset),
            response_format="object",
        )
        check(page["assistants"], schema.Assistant)
        seen += [assistant["assistant_id"] for assistant in page["assistants"]]
        offset, pages = page["next"], pages + 1
    assert pages == 2 and len(set(seen)) == 3, (pages, seen)

    for _ in range(3):
        client.threads.create(metadata={"tag": TAG})
    http = client.http.client
    first = http.post("/threads/search", json={"metadata": {"tag": TAG}, "limit": 2})
    assert len(first.json()) == 2, first.text
    assert first.headers.get("x-pagination-next") == "2", first.headers
    last = http.post(
        "/threads/search", json={"metadata": {"tag": TAG}, "limit": 2, "offset": 2}
    )
    assert len(last.json()) == 1 and "x-pagination-next" not in last.headers, (
        last.headers
    )
    assert last.headers.get("x-pagination-total") == "3", last.headers


def runs_wait_their_turn(client) -> None:
    """A run asked of a busy thread without `multitask_strategy` is queued, not refused."""
    thread = client.threads.create()["thread_id"]
    first = client.runs.create(thread, "chat", input=question(10, pause=0.1))
    second = client.runs.create(thread, "chat", input=question(1))
    check(second, schema.Run)
    assert second["multitask_strategy"] == "enqueue", second
    values = client.runs.join(thread, second["run_id"])
    contents = [message["content"] for message in values["messages"]]
    assert contents == ["hi", " ".join(f"w{i}" for i in range(10)), "hi", "w0"], values
    statuses = {run["run_id"]: run["status"] for run in client.runs.list(thread)}
    assert statuses == {first["run_id"]: "success", second["run_id"]: "success"}


def paused_runs(client) -> None:
    """A run paused at `interrupt()` ended well; one stopped at a breakpoint asked nothing."""
    asked = client.threads.create()["thread_id"]
    values = client.runs.wait(asked, "chat", input=question(1, ask=True))
    assert values["__interrupt__"][0]["value"] == {"question": "Send this answer?"}
    [run] = client.runs.list(asked)
    assert run["status"] == "success", run
    assert client.threads.get(asked)["status"] == "interrupted"

    stopped = client.threads.create()["thread_id"]
    values = client.runs.wait(
        stopped, "chat", input=question(1), interrupt_before=["notes"]
    )
    assert "__interrupt__" not in values, values
    assert values["messages"][-1]["content"] == "w0", values
    assert client.threads.get(stopped)["status"] == "interrupted"
    [run] = client.runs.list(stopped)
    # CONTRACTS §14: crewd names a run stopped by interrupt_before `interrupted`; the official server `success`.
    assert run["status"] == ("success" if OFFICIAL else "interrupted"), run


def busy_thread_deleted(client) -> None:
    """Deleting a thread whose run is running deletes it, as the official server does."""
    thread = client.threads.create()["thread_id"]
    run = client.runs.create(thread, "chat", input=question(100, pause=0.1))
    for _ in range(200):
        if client.runs.get(thread, run["run_id"])["status"] == "running":
            break
        time.sleep(0.05)
    assert client.threads.get(thread)["status"] == "busy"
    client.threads.delete(thread)
    for call in (
        lambda: client.threads.get(thread),
        lambda: client.runs.get(thread, run["run_id"]),
    ):
        try:
            call()
        except httpx.HTTPStatusError as error:
            assert status_of(error) == 404, error.response.text
        else:
            raise AssertionError("the deleted thread or its run is still there")


def threads_found_by_graph(client) -> None:
    """A run marks its thread with its graph and assistant: apps list a graph's threads by them."""
    thread = client.threads.create(metadata={"tag": TAG, "mine": 1})["thread_id"]
    client.runs.wait(thread, "chat", input=question(1))
    [run] = client.runs.list(thread)
    metadata = client.threads.get(thread)["metadata"]
    assert metadata == {
        "tag": TAG,
        "mine": 1,
        "graph_id": "chat",
        "assistant_id": run["assistant_id"],
    }, metadata
    for marks in ({"graph_id": "chat"}, {"assistant_id": run["assistant_id"]}):
        found = client.threads.search(metadata={**marks, "tag": TAG}, limit=100)
        assert [t["thread_id"] for t in found] == [thread], (marks, found)
    created = str(uuid.uuid4())
    client.runs.wait(created, "chat", input=question(1), if_not_exists="create")
    assert client.threads.get(created)["metadata"]["graph_id"] == "chat"


def assistant_deleted_with_threads(client) -> None:
    """`delete_threads` deletes the threads the assistant ran in, and only those."""
    assistant = client.assistants.create("chat", name="short-lived")["assistant_id"]
    gone, kept = (client.threads.create()["thread_id"] for _ in range(2))
    client.runs.wait(gone, assistant, input=question(1))
    client.runs.wait(kept, "chat", input=question(1))
    client.assistants.delete(assistant, delete_threads=True)
    try:
        client.threads.get(gone)
    except httpx.HTTPStatusError as error:
        assert status_of(error) == 404, error.response.text
    else:
        raise AssertionError("the assistant's thread is still there")
    assert client.threads.get(kept)["thread_id"] == kept


def states_keep_old_fields(client) -> None:
    """States carry the deprecated `checkpoint_id` and `parent_checkpoint_id` older code reads."""
    thread = client.threads.create()["thread_id"]
    for _ in range(2):
        client.runs.wait(thread, "chat", input=question(1))
    for state in [
        client.threads.get_state(thread),
        *client.threads.get_history(thread),
    ]:
        assert state["checkpoint_id"] == state["checkpoint"]["checkpoint_id"], state
        parent = state["parent_checkpoint"]
        assert state["parent_checkpoint_id"] == (parent and parent["checkpoint_id"])


def bad_crons_refused(client) -> None:
    """A cron whose schedule or time zone is not one is the client's mistake: 422 naming it."""
    for asked, named in (
        ({"schedule": "nope"}, "schedule"),
        ({"schedule": "0 0 * * *", "timezone": "Mars/Base"}, "timezone"),
    ):
        try:
            client.crons.create("chat", **asked)
        except httpx.HTTPStatusError as error:
            assert status_of(error) == 422, error.response.text
            assert named in error.response.json()["detail"].lower(), error.response.text
        else:
            raise AssertionError(f"a cron of {asked} was made")


def stateless_run_followed(client) -> None:
    """A stateless run answers a thread id under which the SDK follows it (`runs.get`, `runs.join`)."""
    run = client.runs.create(None, "chat", input=question(5, pause=0.1))
    check(run, schema.Run)
    uuid.UUID(run["thread_id"])
    got = client.runs.get(run["thread_id"], run["run_id"])
    assert got["run_id"] == run["run_id"] and got["thread_id"] == run["thread_id"]
    values = client.runs.join(run["thread_id"], run["run_id"])
    assert values["messages"][-1]["content"] == "w0 w1 w2 w3 w4", values
    [batched] = client.runs.create_batch(
        [{"assistant_id": "chat", "input": question(2, pause=0.1)}]
    )
    values = client.runs.join(batched["thread_id"], batched["run_id"])
    assert values["messages"][-1]["content"] == "w0 w1", values


async def async_search_pages(client) -> None:
    page = await client.assistants.search(
        metadata={"tag": TAG}, limit=2, response_format="object"
    )
    assert len(page["assistants"]) == 2 and page["next"] == "2", page


def main() -> None:
    sync_client, async_client = clients()
    search_pages(sync_client)
    runs_wait_their_turn(sync_client)
    paused_runs(sync_client)
    busy_thread_deleted(sync_client)
    stateless_run_followed(sync_client)
    threads_found_by_graph(sync_client)
    bad_crons_refused(sync_client)
    assistant_deleted_with_threads(sync_client)
    states_keep_old_fields(sync_client)
    asyncio.run(async_search_pages(async_client))
    done({"tag": TAG})


main()
