"""LangGraph's checkpoint as one JSON value, so that crewd can keep it with the thread and hand it back.

The latest checkpoint of the thread (and of its subgraphs while the graph is stopped at an interrupt) is written with
the saver's own serializer (JsonPlusSerializer by default); its bytes travel as base64.
"""

import base64

FORMAT = "crewd.langgraph.v1"


def dump(saver, thread_id, include_subgraphs):
    latest = {}
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


def restore(saver, thread_id, value):
    if not value:
        return
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise ValueError(f"The thread's checkpoint is not a LangGraph checkpoint written by crewd ({FORMAT})")
    for entry in value["checkpoints"]:
        _restore_entry(saver, thread_id, entry)


def _dump_tuple(serde, namespace, item):
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


def _restore_entry(saver, thread_id, entry):
    serde = saver.serde
    checkpoint = _untyped(serde, entry["checkpoint"])
    metadata = _untyped(serde, entry["metadata"])
    parent_config = {
        "configurable": {"thread_id": thread_id, "checkpoint_ns": entry["ns"], "checkpoint_id": entry["parent_id"]}
    }
    saved_config = saver.put(parent_config, checkpoint, metadata, checkpoint["channel_versions"])
    writes_by_task = {}
    for write in entry["writes"]:
        writes_by_task.setdefault(write["task_id"], []).append((write["channel"], _untyped(serde, write["value"])))
    for task_id, writes in writes_by_task.items():
        saver.put_writes(saved_config, writes, task_id)


def _typed(serde, value):
    kind, data = serde.dumps_typed(value)
    return {"type": kind, "data": base64.b64encode(data).decode("ascii")}


def _untyped(serde, typed):
    return serde.loads_typed((typed["type"], base64.b64decode(typed["data"])))
