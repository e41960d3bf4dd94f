"""LangGraph's checkpoint as one JSON value, so that crewd can keep it with the thread and hand it back.

The latest checkpoint of the thread (and of its subgraphs while the graph is stopped at an interrupt) is written with
the saver's own serializer (JsonPlusSerializer by default); its bytes travel as base64. A checkpoint is read back
strictly: one whose msgpack names a type or function to call that is not among LangGraph's safe types (messages,
documents, dates, ...) is refused before anything of it is decoded, and the run fails naming it.
"""

from __future__ import annotations

import base64
from typing import Any, Protocol

from . import internals

FORMAT = "crewd.langgraph.v1"
# LangGraph's msgpack extension codes that name something to call (langgraph.checkpoint.serde.jsonplus).
CALLING_EXTENSIONS = {0, 1, 2, 4, 5}
METHOD_EXTENSION = 3
NESTED_EXTENSION = 7


class CheckpointRefused(ValueError):
    """The thread's checkpoint names a type crewd does not construct."""


class Serde(Protocol):
    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...
    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


Typed = dict[str, str]


def dump(saver: Any, thread_id: str, include_subgraphs: bool) -> dict[str, Any] | None:
    latest: dict[str, Any] = {}
    for item in saver.list({"configurable": {"thread_id": thread_id}}):
        namespace = item.config["configurable"].get("checkpoint_ns", "")
        if namespace and not include_subgraphs:
            continue
        current = latest.get(namespace)
        if current is None or item.checkpoint["id"] > current.checkpoint["id"]:
            latest[namespace] = item
    if "" not in latest:
        return None
    # The root first: restoring puts checkpoints back in this order.
    namespaces = sorted(latest, key=lambda name: (name != "", name))
    return {
        "format": FORMAT,
        "checkpoints": [_dump_tuple(saver.serde, namespace, latest[namespace]) for namespace in namespaces],
    }


def restore(saver: Any, thread_id: str, value: object) -> None:
    if not value:
        return
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise ValueError(f"The thread's checkpoint is not a LangGraph checkpoint written by crewd ({FORMAT})")
    for entry in value["checkpoints"]:
        for typed in (entry["checkpoint"], entry["metadata"], *(write["value"] for write in entry["writes"])):
            _check(typed)
    for entry in value["checkpoints"]:
        _restore_entry(saver, thread_id, entry)


def _dump_tuple(serde: Serde, namespace: str, item: Any) -> dict[str, Any]:
    parent = item.parent_config["configurable"].get("checkpoint_id") if item.parent_config else None
    return {
        "ns": namespace,
        "parent_id": parent,
        "checkpoint": _typed(serde, item.checkpoint),
        "metadata": _typed(serde, item.metadata),
        "writes": [
            {"task_id": task_id, "channel": channel, "value": _typed(serde, written)}
            for task_id, channel, written in item.pending_writes or []
        ],
    }


def _restore_entry(saver: Any, thread_id: str, entry: dict[str, Any]) -> None:
    serde = saver.serde
    checkpoint = _untyped(serde, entry["checkpoint"])
    metadata = _untyped(serde, entry["metadata"])
    parent_config = {
        "configurable": {"thread_id": thread_id, "checkpoint_ns": entry["ns"], "checkpoint_id": entry["parent_id"]}
    }
    saved_config = saver.put(parent_config, checkpoint, metadata, checkpoint["channel_versions"])
    writes_by_task: dict[str, list[tuple[str, Any]]] = {}
    for write in entry["writes"]:
        writes_by_task.setdefault(write["task_id"], []).append((write["channel"], _untyped(serde, write["value"])))
    for task_id, writes in writes_by_task.items():
        saver.put_writes(saved_config, writes, task_id)


def _typed(serde: Serde, value: object) -> Typed:
    kind, data = serde.dumps_typed(value)
    return {"type": kind, "data": base64.b64encode(data).decode("ascii")}


def _untyped(serde: Serde, typed: Typed) -> Any:
    return serde.loads_typed((typed["type"], base64.b64decode(typed["data"])))


def _check(typed: Typed) -> None:
    """Refuses a value that would construct something, before any value of the checkpoint is decoded."""
    kind = typed["type"]
    if kind == "msgpack":
        _refuse_calls(base64.b64decode(typed["data"]))
    elif kind not in ("null", "bytes", "bytearray", "json"):
        raise CheckpointRefused(f"The thread's checkpoint holds a value of type {kind!r}, which crewd does not decode")


def _refuse_calls(data: bytes) -> None:
    """Reads the msgpack through without constructing anything; raises CheckpointRefused at the first extension that
    names a type or method outside LangGraph's safe ones."""
    import ormsgpack

    safe_types, safe_methods = internals.langgraph_safe_msgpack()
    refused: list[str] = []  # ormsgpack reports a hook's exception as its own ValueError

    def look(code: int, inner: bytes) -> None:
        if code in CALLING_EXTENSIONS or code == METHOD_EXTENSION:
            named = ormsgpack.unpackb(inner, ext_hook=look, option=ormsgpack.OPT_NON_STR_KEYS)
            module, name = str(named[0]), str(named[1])
            safe = (module, name) in safe_types
            if code == METHOD_EXTENSION:
                safe = (module, name, str(named[3])) in safe_methods
            if not safe:
                refused.append(f"{module}.{name}")
                raise CheckpointRefused(refused[0])
        elif code == NESTED_EXTENSION:
            ormsgpack.unpackb(inner, ext_hook=look, option=ormsgpack.OPT_NON_STR_KEYS)

    try:
        ormsgpack.unpackb(data, ext_hook=look, option=ormsgpack.OPT_NON_STR_KEYS)
    except ValueError:
        if not refused:
            raise
        raise CheckpointRefused(
            f"The thread's checkpoint names {refused[0]} to construct, which crewd does not: a checkpoint holds "
            "LangGraph's safe types only (messages, documents, dates, sets and the like)"
        ) from None
