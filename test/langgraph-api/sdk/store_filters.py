"""Store search filters through the real langgraph-sdk: the operators and the matching of LangGraph's own stores.

The same script runs against `langgraph dev` (OFFICIAL=1) to compare; an operator LangGraph does not know fails
there with a server error, on crewd with 422 naming it, so that case runs on crewd only.
"""

import os
import uuid

import httpx
from shapes import clients, done, status_of

OFFICIAL = os.environ.get("OFFICIAL") == "1"

ITEMS = {
    "a": {"score": 3, "tags": ["x"], "meta": {"kind": "doc", "lang": "en"}},
    "b": {"score": 7, "tags": ["x", "y"], "meta": {"kind": "doc", "lang": "fr"}},
    "c": {"score": 9.5, "tags": [], "meta": {"kind": "note"}},
}

# Each filter, and the keys of the items it finds.
CASES = [
    ({"score": {"$gt": 5}}, ["b", "c"]),
    ({"score": {"$gte": 7, "$lt": 9}}, ["b"]),
    ({"score": {"$lte": 3}}, ["a"]),
    ({"score": {"$eq": 7}}, ["b"]),
    ({"score": {"$ne": 7}}, ["a", "c"]),
    ({"score": 9.5}, ["c"]),
    ({"tags": ["x"]}, ["a"]),
    ({"tags": []}, ["c"]),
    ({"meta": {"kind": "doc"}}, ["a", "b"]),
    ({"meta": {"kind": "doc", "lang": "fr"}}, ["b"]),
    ({"meta": {"kind": "doc"}, "score": {"$gt": 4}}, ["b"]),
    ({"missing": None}, ["a", "b", "c"]),
    ({"meta": "doc"}, []),
]


def main() -> None:
    client, _ = clients()
    namespace = ["filters", uuid.uuid4().hex]
    for key, value in ITEMS.items():
        client.store.put_item(namespace, key, value)
    found = {}
    for filter_, expected in CASES:
        items = client.store.search_items(namespace, filter=filter_)["items"]
        keys = sorted(item["key"] for item in items)
        assert keys == expected, f"filter {filter_}: found {keys}, expected {expected}"
        found[str(filter_)] = keys
    if not OFFICIAL:
        try:
            client.store.search_items(namespace, filter={"score": {"$in": [3]}})
        except httpx.HTTPStatusError as error:
            assert status_of(error) == 422, error.response.text
            assert "$in" in error.response.json()["detail"], error.response.text
        else:
            raise AssertionError("an unknown operator was not refused")
    done({"cases": len(found)})


main()
