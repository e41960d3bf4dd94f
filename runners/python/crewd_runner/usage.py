"""Every LLM call's token usage as an `llm.call` event (CONTRACTS §15), in crewd's names.

CrewAI reports a call's usage on `LLMCallCompletedEvent.usage` in OpenAI's names (`prompt_tokens`, …), and a crew's
total on `CrewOutput.token_usage`, which serves as a check: tokens in the total that no call reported (streaming
calls of some providers report none) are sent as one more call. LangChain reports `AIMessage.usage_metadata`, read
by a callback handler on the run's config, for streamed calls too (the aggregated message carries it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from uuid import UUID

if TYPE_CHECKING:
    from crewai import Crew
    from langchain_core.callbacks import BaseCallbackHandler

    from .protocol import EventSink

Usage = dict[str, int]
COUNT_NAMES = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens", "total_tokens")


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)


def _field(source: object, name: str) -> object:
    return source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)


def _usage(input_tokens: int, output_tokens: int, cached: int, reasoning: int, total: int | None) -> Usage:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_input_tokens": cached,
        "reasoning_tokens": reasoning,
        "total_tokens": total if total is not None else input_tokens + output_tokens,
    }


def from_openai_names(usage: object) -> Usage | None:
    """CrewAI's and LiteLLM's usage (`prompt_tokens`, `completion_tokens`, `cached_prompt_tokens` or
    `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`); crewd's own names pass."""
    if usage is None:
        return None
    prompt = _count(_field(usage, "prompt_tokens"))
    completion = _count(_field(usage, "completion_tokens"))
    if prompt is None or completion is None:
        return from_crewd_names(usage)
    cached = _count(_field(usage, "cached_prompt_tokens"))
    if cached is None:
        cached = _count(_field(_field(usage, "prompt_tokens_details"), "cached_tokens"))
    reasoning = _count(_field(_field(usage, "completion_tokens_details"), "reasoning_tokens"))
    return _usage(prompt, completion, cached or 0, reasoning or 0, _count(_field(usage, "total_tokens")))


def from_crewd_names(usage: object) -> Usage | None:
    """Usage already in crewd's names, or LangChain's `usage_metadata` (`input_token_details.cache_read`,
    `output_token_details.reasoning`); None when it holds no input and output counts."""
    if usage is None:
        return None
    input_tokens = _count(_field(usage, "input_tokens"))
    output_tokens = _count(_field(usage, "output_tokens"))
    if input_tokens is None or output_tokens is None:
        return None
    cached = _count(_field(usage, "cached_input_tokens"))
    if cached is None:
        cached = _count(_field(_field(usage, "input_token_details"), "cache_read"))
    reasoning = _count(_field(usage, "reasoning_tokens"))
    if reasoning is None:
        reasoning = _count(_field(_field(usage, "output_token_details"), "reasoning"))
    return _usage(input_tokens, output_tokens, cached or 0, reasoning or 0, _count(_field(usage, "total_tokens")))


class UsageLedger:
    """Stands in front of a run's event sink and adds up the usage of the `llm.call` events going through it."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self._lock = threading.Lock()
        self.reported: Usage = dict.fromkeys(COUNT_NAMES, 0)

    def emit(self, event_type: str, data: object) -> None:
        if event_type == "llm.call" and isinstance(data, Mapping):
            usage = from_crewd_names(data.get("usage"))
            if usage is not None:
                with self._lock:
                    for name in COUNT_NAMES:
                        self.reported[name] += usage[name]
        self._sink.emit(event_type, data)

    def settle(self, total: object, model: str) -> None:
        """Checks a crew's `token_usage` against the calls reported: what no call reported is sent as one call."""
        expected = from_openai_names(total)
        if expected is None:
            return
        with self._lock:
            missing = {name: max(0, expected[name] - self.reported[name]) for name in COUNT_NAMES}
        if missing["input_tokens"] == 0 and missing["output_tokens"] == 0:
            return
        missing["total_tokens"] = missing["input_tokens"] + missing["output_tokens"]
        self.emit("llm.call", {"model": model, "usage": missing, "unattributed": True})


def crew_model(crew: Crew) -> str:
    """The model of a crew's agents when they share one, for usage no call reported; else `unknown`."""
    agents = getattr(crew, "agents", None)
    models = {str(getattr(getattr(agent, "llm", None), "model", "") or "") for agent in agents or ()}
    models.discard("")
    return models.pop() if len(models) == 1 else "unknown"


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def langchain_callback(sink: EventSink) -> BaseCallbackHandler:
    """A LangChain callback handler that sends an `llm.call` event at the end of each chat model or LLM call."""
    from langchain_core.callbacks import BaseCallbackHandler

    class LlmCallReporter(BaseCallbackHandler):
        # Its work is a dict entry and a line: an async run calls it in its event loop, not through a thread of the
        # executor for each event (about 0.8 ms of CPU per run of a one-node graph).
        run_inline = True
        # It reads only LLM and chat model calls: LangChain skips it for the graph's and each node's chain events.
        ignore_chain = True
        ignore_agent = True
        ignore_retriever = True
        ignore_custom_event = True

        def __init__(self) -> None:
            self._started: dict[UUID, Started] = {}

        def _start(self, run_id: UUID, serialized: object, metadata: object) -> None:
            meta: Mapping[str, object] = metadata if isinstance(metadata, Mapping) else {}
            model = meta.get("ls_model_name")
            provider = meta.get("ls_provider")
            name = _field(serialized, "name")
            self._started[run_id] = (
                time.monotonic(),
                _now_iso(),
                model if isinstance(model, str) and model else (name if isinstance(name, str) else None),
                provider if isinstance(provider, str) and provider else None,
            )

        def on_chat_model_start(
            self,
            serialized: dict[str, Any],
            messages: object,
            *,
            run_id: UUID,
            metadata: object = None,
            **kwargs: object,
        ) -> None:
            self._start(run_id, serialized, metadata)

        def on_llm_start(
            self,
            serialized: dict[str, Any],
            prompts: object,
            *,
            run_id: UUID,
            metadata: object = None,
            **kwargs: object,
        ) -> None:
            self._start(run_id, serialized, metadata)

        def on_llm_end(self, response: object, *, run_id: UUID, **kwargs: object) -> None:
            started = self._started.pop(run_id, None)
            _report_llm_result(sink, response, started)

        def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: object) -> None:
            self._started.pop(run_id, None)

    return LlmCallReporter()


Started = tuple[float, str, str | None, str | None]


def _report_llm_result(sink: EventSink, response: object, started: Started | None) -> None:
    usage: Usage | None = None
    model: str | None = None
    for generations in getattr(response, "generations", None) or ():
        for generation in generations:
            message = getattr(generation, "message", None)
            found = from_crewd_names(getattr(message, "usage_metadata", None))
            if found is not None:
                usage = found if usage is None else {name: usage[name] + found[name] for name in COUNT_NAMES}
            metadata = getattr(message, "response_metadata", None)
            named = _field(metadata, "model_name") or _field(metadata, "model")
            if isinstance(named, str) and named:
                model = named
    llm_output = getattr(response, "llm_output", None)
    if usage is None:
        usage = from_openai_names(_field(llm_output, "token_usage"))
    named = _field(llm_output, "model_name")
    model = model or (named if isinstance(named, str) and named else None) or (started[2] if started else None)
    data: dict[str, Any] = {"model": model or "unknown"}
    if started and started[3]:
        data["provider"] = started[3]
    if usage is not None:
        data["usage"] = usage
    if started:
        data["started_at"] = started[1]
        data["duration_ms"] = round((time.monotonic() - started[0]) * 1000, 3)
    sink.emit("llm.call", data)


def with_usage_callback(config: dict[str, Any], sink: EventSink) -> dict[str, Any]:
    """The run's LangGraph config with the usage reporter among its callbacks."""
    callbacks = config.get("callbacks")
    reporter = langchain_callback(sink)
    if callbacks is None:
        return {**config, "callbacks": [reporter]}
    if isinstance(callbacks, list):
        return {**config, "callbacks": [*callbacks, reporter]}
    # A callback manager: the reporter joins its handlers, inherited by every call under it.
    callbacks.add_handler(reporter, inherit=True)
    return config
