"""Crons through the real langgraph-sdk, sync then async (CONTRACTS §14 "Crons")."""

import asyncio
import uuid

from langgraph_sdk import schema
from shapes import check, clients, done


def sync_part(client) -> dict:
    cron = client.crons.create(
        "agent", schedule="0 * * * *", input={"question": "Hourly?"}
    )
    check(cron, schema.Cron)
    assert uuid.UUID(cron["cron_id"]) and cron["payload"]["input"] == {
        "question": "Hourly?"
    }, cron
    assert cron["enabled"] is True and cron["next_run_date"], cron

    thread = client.threads.create()
    on_thread = client.crons.create_for_thread(
        thread["thread_id"], "agent", schedule="30 6 * * *", input={}
    )
    check(on_thread, schema.Cron)
    assert on_thread["thread_id"] == thread["thread_id"], on_thread

    everything = client.crons.search(assistant_id="agent")
    check(everything, schema.Cron)
    assert sorted(c["cron_id"] for c in everything) == sorted(
        [cron["cron_id"], on_thread["cron_id"]]
    ), everything
    assert [
        c["cron_id"] for c in client.crons.search(thread_id=thread["thread_id"])
    ] == [on_thread["cron_id"]]
    assert client.crons.count(assistant_id="agent") == 2
    assert len(client.crons.search(limit=1)) == 1

    paused = client.crons.update(on_thread["cron_id"], enabled=False, schedule="45 7 * * *")
    check(paused, schema.Cron)
    assert paused["enabled"] is False and paused["schedule"] == "45 7 * * *" and paused["next_run_date"] is None, paused

    client.crons.delete(on_thread["cron_id"])
    assert client.crons.count() == 1
    return {"cron": cron["cron_id"], "thread": thread["thread_id"]}


async def async_part(client) -> dict:
    cron = await client.crons.create(
        "agent", schedule="15 3 * * 1", input={"question": "Weekly?"}
    )
    check(cron, schema.Cron)
    assert await client.crons.count() == 2
    await client.crons.delete(cron["cron_id"])
    assert await client.crons.count() == 1
    return {"async_cron": cron["cron_id"]}


def main() -> None:
    sync_client, async_client = clients()
    result = sync_part(sync_client)
    result.update(asyncio.run(async_part(async_client)))
    done(result)


main()
