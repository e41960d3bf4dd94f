"""The Agent Server's stream modes (CONTRACTS §14): what a run started through crewd's LangGraph API streams.

Such a run's request carries `langgraph` (see `StreamRequest`). Each chunk the client's modes ask for becomes one
`langgraph.chunk` event `{"mode", "ns", "data"}`, stored in the run's event log like any other event; crewd's
LangGraph API frames it as the SSE event the SDKs parse (`event: <mode>` or `<mode>|<ns>`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .jsonsafe import to_jsonable

CHUNK_EVENT = "langgraph.chunk"
# Where crewd's LangGraph API puts the client's stream request in a run's input (taken out before the crew sees it).
INPUT_KEY = "__langgraph__"
# Modes LangGraph's own `stream` produces; the others are made here from them.
GRAPH_MODES = ("values", "updates", "custom", "messages", "debug", "tasks", "checkpoints")
API_MODES = (*GRAPH_MODES, "messages-tuple", "events")
INTERRUPT_KEY = "__interrupt__"


def take_stream_request(request: dict[str, Any]) -> dict[str, Any]:
    """The request with the stream request moved from its input (where crewd's LangGraph API puts it, so that a
    queued run keeps it) to `langgraph`, where `StreamRequest.of` reads it."""
    run_input = request.get("input")
    if isinstance(run_input, dict) and INPUT_KEY in run_input:
        rest = {key: value for key, value in run_input.items() if key != INPUT_KEY}
        return {**request, "input": rest, "langgraph": run_input[INPUT_KEY]}
    return request


class EventSink(Protocol):
    def emit(self, event_type: str, data: object) -> None: ...


class StreamingGraph(Protocol):
    """What is used of a compiled LangGraph graph (Pregel)."""

    def astream(self, graph_input: object, config: Mapping[str, Any], **kwargs: object) -> AsyncIterator[object]: ...

    def astream_events(
        self, graph_input: object, config: Mapping[str, Any], **kwargs: object
    ) -> AsyncIterator[Mapping[str, Any]]: ...


@dataclass(frozen=True)
class StreamRequest:
    """What the client asked of the run beyond its input: modes, subgraphs, the graph's config and context, and
    where to stop (`interrupt_before`/`interrupt_after`). `null_input`: the client sent no input and no command,
    which to LangGraph means "go on from the checkpoint" (after `interrupt_before`, say)."""

    modes: tuple[str, ...]
    subgraphs: bool = False
    config: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, Any] | None = None
    interrupt_before: str | tuple[str, ...] | None = None
    interrupt_after: str | tuple[str, ...] | None = None
    null_input: bool = False
    # The client's command (`resume`, `update`, `goto`): crewd's own `command` carries only a resume.
    command: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> StreamRequest | None:
        """The run's stream request, or None for a run started through `/v1` (crewd's own events)."""
        raw = request.get("langgraph")
        if not isinstance(raw, Mapping):
            return None
        modes = raw.get("stream_mode")
        wanted = tuple(mode for mode in modes if mode in API_MODES) if isinstance(modes, list) else ("values",)
        config = raw.get("config")
        context = raw.get("context")
        return cls(
            modes=wanted,
            subgraphs=raw.get("stream_subgraphs") is True,
            config=config if isinstance(config, Mapping) else {},
            context=context if isinstance(context, Mapping) else None,
            interrupt_before=_node_list(raw.get("interrupt_before")),
            interrupt_after=_node_list(raw.get("interrupt_after")),
            null_input=raw.get("null_input") is True,
            command=command if isinstance(command := raw.get("command"), Mapping) else None,
        )

    def graph_modes(self) -> list[str]:
        """The modes to ask of the graph: both message modes come from LangGraph's `messages`."""
        wanted = {"messages" if mode == "messages-tuple" else mode for mode in self.modes}
        return [mode for mode in GRAPH_MODES if mode in wanted]

    def graph_config(self, thread_id: str) -> dict[str, Any]:
        """The client's config with the run's thread: crewd's own checkpointer keys win."""
        configurable = self.config.get("configurable")
        own = dict(configurable) if isinstance(configurable, Mapping) else {}
        own["thread_id"] = thread_id
        for key in ("checkpoint_id", "checkpoint_ns"):
            own.pop(key, None)
        return {**{key: value for key, value in self.config.items() if key != "configurable"}, "configurable": own}

    def stream_kwargs(self) -> dict[str, Any]:
        """What `astream` takes beside input and config."""
        kwargs: dict[str, Any] = {"stream_mode": self.graph_modes(), "subgraphs": self.subgraphs}
        if self.context is not None:
            kwargs["context"] = dict(self.context)
        if self.interrupt_before is not None:
            kwargs["interrupt_before"] = self.interrupt_before
        if self.interrupt_after is not None:
            kwargs["interrupt_after"] = self.interrupt_after
        return kwargs

    @property
    def stops_at_nodes(self) -> bool:
        return bool(self.interrupt_before) or bool(self.interrupt_after)


def _node_list(value: object) -> str | tuple[str, ...] | None:
    if value == "*":
        return "*"
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


class ChunkRelay:
    """Turns what the graph streams into `langgraph.chunk` events, for the modes the client asked."""

    def __init__(self, sink: EventSink, request: StreamRequest) -> None:
        self._sink = sink
        self._modes = frozenset(request.modes)
        self._messages: dict[str, Any] = {}

    def emit(self, mode: str, ns: Sequence[str], data: object) -> None:
        self._sink.emit(CHUNK_EVENT, {"mode": mode, "ns": list(ns), "data": to_jsonable(data)})

    def chunk(self, ns: Sequence[str], mode: str, chunk: object) -> None:
        if mode == "messages":
            self._message(ns, chunk)
        elif mode in self._modes:
            self.emit(mode, ns, chunk)

    def _message(self, ns: Sequence[str], chunk: object) -> None:
        if not isinstance(chunk, tuple) or len(chunk) != 2:
            return
        message, metadata = chunk
        if "messages-tuple" in self._modes:
            self.emit("messages-tuple", ns, [message, metadata])
        if "messages" in self._modes:
            self._legacy_message(ns, message, metadata)

    def _legacy_message(self, ns: Sequence[str], message: object, metadata: object) -> None:
        """The `messages` mode of the Agent Server: the message so far (`messages/partial`), its metadata once
        (`messages/metadata`), and a whole message as `messages/complete`."""
        from langchain_core.messages import BaseMessageChunk, message_chunk_to_message

        key = str(getattr(message, "id", None) or id(message))
        known = self._messages.get(key)
        if known is None:
            self._messages[key] = message
            self.emit("messages/metadata", ns, {key: {"metadata": metadata}})
        elif isinstance(known, BaseMessageChunk) and isinstance(message, BaseMessageChunk):
            self._messages[key] = known + message
        else:
            self._messages[key] = message
        whole = self._messages[key]
        partial = isinstance(whole, BaseMessageChunk)
        shown = message_chunk_to_message(whole) if partial else whole
        self.emit("messages/partial" if partial else "messages/complete", ns, [shown])


async def stream_graph(
    graph: StreamingGraph, graph_input: object, config: Mapping[str, Any], sink: EventSink, request: StreamRequest
) -> None:
    """Runs the graph to its end or interrupt, relaying the chunks of the client's modes as they come."""
    relay = ChunkRelay(sink, request)
    kwargs = request.stream_kwargs()
    if "events" in request.modes:
        await _stream_with_events(graph, graph_input, config, relay, kwargs)
        return
    parts: AsyncIterator[Any] = graph.astream(graph_input, config, **kwargs)
    async for part in parts:
        ns, mode, chunk = _split(part, request.subgraphs)
        relay.chunk(ns, mode, chunk)


async def _stream_with_events(
    graph: StreamingGraph, graph_input: object, config: Mapping[str, Any], relay: ChunkRelay, kwargs: dict[str, Any]
) -> None:
    """The `events` mode: LangChain's `astream_events`, each event as it is; the root graph's own stream chunks
    among them are the other modes' chunks."""
    subgraphs = bool(kwargs.get("subgraphs"))
    events: AsyncIterator[Mapping[str, Any]] = graph.astream_events(graph_input, config, version="v2", **kwargs)
    async for event in events:
        if event.get("event") == "on_chain_stream" and not event.get("parent_ids"):
            data = event.get("data")
            part = data.get("chunk") if isinstance(data, Mapping) else None
            if isinstance(part, tuple):
                ns, mode, chunk = _split(part, subgraphs)
                relay.chunk(ns, mode, chunk)
            continue
        relay.emit("events", (), event)


def _split(part: object, subgraphs: bool) -> tuple[tuple[str, ...], str, object]:
    """`(ns, mode, chunk)` of what `astream` yields for a list of modes: `(mode, chunk)`, or with subgraphs
    `(ns, mode, chunk)`."""
    if not isinstance(part, tuple):
        raise TypeError(f"LangGraph streamed {type(part).__name__}, not a (mode, chunk) tuple")
    if subgraphs:
        ns, mode, chunk = part
        return tuple(str(item) for item in ns), str(mode), chunk
    mode, chunk = part
    return (), str(mode), chunk


class CrewStreamSink:
    """A CrewAI crew or flow in the Agent Server's modes (CONTRACTS §14): every crewd event goes on as ever, and
    besides, a finished task or method is an `updates` chunk `{task: output}`, `values` the outputs so far, and the
    other events are `custom` chunks."""

    def __init__(self, sink: EventSink, request: StreamRequest) -> None:
        self._sink = sink
        self._relay = ChunkRelay(sink, request)
        self._modes = frozenset(request.modes)
        self._values: dict[str, Any] = {}

    def emit(self, event_type: str, data: object) -> None:
        self._sink.emit(event_type, data)
        if event_type == "task.completed" and isinstance(data, Mapping):
            task = str(data.get("task") or "task")
            output = data.get("output")
            self._values[task] = output
            if "updates" in self._modes:
                self._relay.emit("updates", (), {task: output})
            if "values" in self._modes:
                self._relay.emit("values", (), dict(self._values))
        elif "custom" in self._modes and event_type not in ("log", "llm.call"):
            self._relay.emit("custom", (), {"type": event_type, "data": data})


def crew_sink(sink: EventSink, request: Mapping[str, Any]) -> EventSink:
    """Where a crew's or flow's events go: through `CrewStreamSink` for a run of crewd's LangGraph API."""
    streamed = StreamRequest.of(request)
    return sink if streamed is None else CrewStreamSink(sink, streamed)
