"""Assistants through the real langgraph-sdk, sync then async (CONTRACTS §14 "Assistants")."""

import asyncio
import uuid

import httpx
from langgraph_sdk import schema
from shapes import check, clients, done, status_of


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
    found = client.assistants.search(graph_id="agent")
    check(found, schema.Assistant)
    default = next(a for a in found if a["metadata"].get("created_by") == "system")
    assert uuid.UUID(default["assistant_id"]), default
    assert (
        default["graph_id"] == "agent"
        and default["name"] == "agent"
        and default["version"] == 1
    ), default
    assert client.assistants.get("agent")["assistant_id"] == default["assistant_id"]
    assert client.assistants.get(default["assistant_id"])["graph_id"] == "agent"

    chosen = str(uuid.uuid4())
    mine = client.assistants.create(
        graph_id="agent",
        assistant_id=chosen,
        config={"configurable": {"tone": "dry"}},
        context={"user": "ada"},
        metadata={"mode": "sync"},
        name="dry agent",
    )
    check(mine, schema.Assistant)
    assert (
        mine["assistant_id"] == chosen
        and mine["version"] == 1
        and mine["context"] == {"user": "ada"}
    ), mine
    expect_status(
        409, lambda: client.assistants.create(graph_id="agent", assistant_id=chosen)
    )
    again = client.assistants.create(
        graph_id="agent", assistant_id=chosen, if_exists="do_nothing"
    )
    assert again["name"] == "dry agent", again

    updated = client.assistants.update(chosen, name="drier agent", metadata={"more": 1})
    check(updated, schema.Assistant)
    assert updated["version"] == 2 and updated["metadata"] == {
        "mode": "sync",
        "more": 1,
    }, updated
    versions = client.assistants.get_versions(chosen)
    check(versions, schema.AssistantVersion)
    assert [v["version"] for v in versions] == [2, 1], versions
    back = client.assistants.set_latest(chosen, 1)
    assert back["version"] == 1 and back["name"] == "dry agent", back

    assert client.assistants.count(metadata={"mode": "sync"}) == 1
    assert client.assistants.count(graph_id="agent") >= 2
    named = client.assistants.search(name="dry", graph_id="agent")
    assert [a["assistant_id"] for a in named] == [chosen], named

    schemas = client.assistants.get_schemas(chosen)
    check(schemas, schema.GraphSchema)
    assert schemas["graph_id"] == "agent"
    graph = client.assistants.get_graph("agent")
    assert isinstance(graph["nodes"], list) and isinstance(graph["edges"], list), graph

    expect_status(409, lambda: client.assistants.delete(default["assistant_id"]))
    client.assistants.delete(chosen)
    expect_status(404, lambda: client.assistants.get(chosen))
    expect_status(404, lambda: client.assistants.get(str(uuid.uuid4())))
    expect_status(404, lambda: client.assistants.create(graph_id="no-such-graph"))
    expect_status(422, lambda: client.http.post("/assistants", json={"graph_id": 5}))
    return {"default": default["assistant_id"]}


async def async_part(client) -> dict:
    found = await client.assistants.search(graph_id="agent", limit=1)
    check(found, schema.Assistant)
    assert len(found) == 1
    mine = await client.assistants.create(
        graph_id="agent", metadata={"mode": "async"}, name="async agent"
    )
    check(mine, schema.Assistant)
    assert (await client.assistants.get(mine["assistant_id"]))["name"] == "async agent"
    assert await client.assistants.count(metadata={"mode": "async"}) == 1
    updated = await client.assistants.update(
        mine["assistant_id"], config={"configurable": {"crewd_environment": "staging"}}
    )
    assert updated["config"] == {"configurable": {"crewd_environment": "staging"}}, (
        updated
    )
    await client.assistants.delete(mine["assistant_id"])
    assert await client.assistants.count(metadata={"mode": "async"}) == 0
    return {"async_created": mine["assistant_id"]}


def main() -> None:
    sync_client, async_client = clients()
    result = sync_part(sync_client)
    result.update(asyncio.run(async_part(async_client)))
    done(result)


main()
