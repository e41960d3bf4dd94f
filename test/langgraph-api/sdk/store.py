"""The store through the real langgraph-sdk, sync then async (CONTRACTS §14 "Store")."""

import asyncio

import httpx
from langgraph_sdk import schema
from shapes import check, clients, done, status_of


def expect_status(status: int, call, naming: str = "") -> None:
    try:
        call()
    except httpx.HTTPStatusError as error:
        assert status_of(error) == status, (
            f"expected {status}, got {status_of(error)}: {error.response.text}"
        )
        assert naming in error.response.json()["detail"], error.response.text
        return
    raise AssertionError(f"expected {status}, got a success")


def sync_part(client) -> dict:
    store = client.store
    store.put_item(["users", "ada", "prefs"], "theme", {"color": "dark", "size": 14})
    store.put_item(["users", "ada", "prefs"], "lang", {"code": "en"})
    store.put_item(["users", "bob"], "theme", {"color": "light"})
    item = store.get_item(["users", "ada", "prefs"], "theme")
    check(item, schema.Item)
    assert item["namespace"] == ["users", "ada", "prefs"] and item["value"] == {
        "color": "dark",
        "size": 14,
    }, item
    store.put_item(["users", "ada", "prefs"], "theme", {"color": "blue"})
    assert store.get_item(["users", "ada", "prefs"], "theme")["value"] == {
        "color": "blue"
    }
    assert store.get_item(["users", "ada", "prefs"], "missing") is None

    found = store.search_items(["users"], limit=10)
    check(found["items"], schema.SearchItem)
    assert len(found["items"]) == 3, found
    ada = store.search_items(["users", "ada"])
    assert sorted(i["key"] for i in ada["items"]) == ["lang", "theme"], ada
    dark = store.search_items(["users"], filter={"color": "light"})
    assert [(i["namespace"], i["key"]) for i in dark["items"]] == [
        (["users", "bob"], "theme")
    ], dark
    paged = store.search_items(["users"], limit=1, offset=1)
    assert len(paged["items"]) == 1
    expect_status(
        422,
        lambda: store.search_items(["users"], query="dark colors"),
        "embedding index",
    )

    spaces = store.list_namespaces(prefix=["users"])
    assert sorted(spaces["namespaces"]) == [
        ["users", "ada", "prefs"],
        ["users", "bob"],
    ], spaces
    assert store.list_namespaces(max_depth=2)["namespaces"] == [
        ["users", "ada"],
        ["users", "bob"],
    ]
    assert store.list_namespaces(suffix=["prefs"])["namespaces"] == [
        ["users", "ada", "prefs"]
    ]

    store.delete_item(["users", "bob"], "theme")
    assert store.get_item(["users", "bob"], "theme") is None
    # The SDK refuses such a label itself; a client that does not is answered 422.
    expect_status(
        422,
        lambda: client.http.put(
            "/store/items", json={"namespace": ["a.b"], "key": "k", "value": {}}
        ),
        ".",
    )
    return {"items": len(found["items"])}


async def async_part(client) -> dict:
    store = client.store
    await store.put_item(["async"], "one", {"n": 1})
    item = await store.get_item(["async"], "one")
    check(item, schema.Item)
    found = await store.search_items(["async"])
    assert [i["key"] for i in found["items"]] == ["one"], found
    await store.delete_item(["async"], "one")
    assert (await store.search_items(["async"]))["items"] == []
    return {"async": True}


def main() -> None:
    sync_client, async_client = clients()
    result = sync_part(sync_client)
    result.update(asyncio.run(async_part(async_client)))
    done(result)


main()
