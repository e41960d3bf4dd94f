"""LangGraph's BaseStore over crewd's store: the items of `/store/items`, of the run's organization, reached through
the run's calls (store_channel), so that a sandboxed run without a network to crewd has them too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

# One call to crewd: the op's fields in, its result out (or store_channel.CallFailed).
Call = Callable[[dict[str, Any]], Any]


class CrewdStore(BaseStore):
    """Each op of a batch is one call, in order. Search by `query` is refused by crewd (no embedding index), as
    `POST /store/items/search` refuses it; `index` other than False or None too; `ttl` is ignored."""

    supports_ttl = False

    def __init__(self, call: Call) -> None:
        self._call = call

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # A call waits for its answer: off the event loop, so that the graph's other tasks go on.
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            found = self._call({"op": "get", "namespace": list(op.namespace), "key": op.key})
            return None if found is None else Item(**_item_fields(found))
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"crewd's store does not know the op {type(op).__name__}")

    def _put(self, op: PutOp) -> None:
        ref = {"namespace": list(op.namespace), "key": op.key}
        if op.value is None:
            self._call({"op": "delete", **ref})
            return
        fields: dict[str, Any] = {"op": "put", **ref, "value": dict(op.value)}
        if op.index is not None:
            fields["index"] = op.index if op.index is False else list(op.index)
        self._call(fields)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        fields: dict[str, Any] = {
            "op": "search",
            "namespace_prefix": list(op.namespace_prefix),
            "filter": op.filter,
            "limit": op.limit,
            "offset": op.offset,
        }
        if op.query is not None:
            fields["query"] = op.query
        found = self._call(fields)
        return [SearchItem(**_item_fields(item), score=item.get("score")) for item in found or []]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        fields: dict[str, Any] = {"op": "list_namespaces", "limit": op.limit, "offset": op.offset}
        for condition in op.match_conditions or ():
            if "*" in condition.path:
                raise ValueError("crewd's store lists namespaces by exact prefix and suffix: no '*' in a path")
            fields[condition.match_type] = list(condition.path)
        if op.max_depth is not None:
            fields["max_depth"] = op.max_depth
        found = self._call(fields)
        return [tuple(namespace) for namespace in found or []]


def _item_fields(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "namespace": tuple(item["namespace"]),
        "key": item["key"],
        "value": item["value"],
        "created_at": datetime.fromisoformat(item["created_at"]),
        "updated_at": datetime.fromisoformat(item["updated_at"]),
    }
