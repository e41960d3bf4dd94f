"""Runs of a built-in LangGraph graph in the fork server, before it imports the version's graph and forks.

What any first run in a process pays (LangGraph's and LangChain's lazy imports and lazily built caches, the
interpreter specialising the code a run runs: Python 3.11 keeps specialised code across a fork) is then paid once, in
the server, instead of in every child it forks. Where an environment server forks version servers, it rehearses
before it forks them, and they inherit it. The graph's runs take a run's own path (`cli.run`, `run_graph`: its
checkpointer, crewd's store, the usage callback, `astream` with the modes of crewd's runs and of its LangGraph API,
a thread's checkpoint written and read back, `asyncio.run`), with a messages channel, a chat model of LangChain's that
answers at once (when langchain_core has one), a sync and an async node, a conditional edge and a custom event.

The rehearsal must leave nothing a run could see or that could leave the machine:
- it comes before the graph's module is imported: none of the version's code runs or hears it;
- LangSmith tracing is off for it (a context of LangSmith's own, so that none of its cached settings is touched);
- its events go to an Emitter on /dev/null, and whatever it writes on descriptors 1 and 2 there too;
- each run has a checkpointer and a store of its own, dropped after it; it writes no file;
- the warnings it raises are not shown, and none is marked as shown: a run still sees its own;
- no thread is left when it ends (`asyncio.run` shuts the loop's executor down); one left raises ThreadsLeft, as the
  CrewAI rehearsal does, rather than let the server fork without it;
- `asyncio.run` leaves the main thread's event loop set to none: before_import.rehearse renews asyncio's policy
  after it.
Where it cannot be done (a LangGraph or LangChain without a part, a run that fails), the server's log says why and
children pay as before.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from . import cli
from .langgraph_adapter import run_graph
from .protocol import Emitter
from .rehearsal import ThreadsLeft, output_discarded

_log = logging.getLogger(__name__)

# Python 3.11 specialises a function's code only after it ran 8 times: three rounds of three runs each run what a run
# calls once 9 times. Measured (bench_forked_child.py): a forked child's run gained as much from 3 rounds as from 10,
# which cost the server about 0.2 s of CPU more.
ROUNDS = 3
ANSWER = "rehearsed"
THREAD_ID = "crewd-rehearsal"
# The modes crewd's LangGraph API asks of a run (its default is `values`), beside crewd's own `updates` and `custom`.
API_MODES = ["values", "updates", "messages-tuple", "custom"]


def rehearse() -> bool:
    """Runs the built-in graph ROUNDS times each way a run takes it; whether it did. One that cannot leaves the work to
    the children (the log says why); one whose threads outlive it raises ThreadsLeft."""
    if threading.active_count() != 1:
        # Threads of the server's own: which of them the rehearsal started could not be told.
        _log.warning("crewd fork server: no LangGraph rehearsal, threads are running already")
        return False
    try:
        graph = built_in_graph()
    except Exception as error:  # noqa: BLE001 (LangGraph's code, of whichever version the environment holds: logged)
        _log.warning("crewd fork server: no LangGraph rehearsal, this LangGraph cannot build its graph: %r", error)
        return False
    try:
        with tracing_off(), _warnings_unmarked(), output_discarded() as sink:
            failed = _run_rounds(graph, sink)
    finally:
        _check_threads()
    if failed is not None:
        _log.warning("crewd fork server: the LangGraph rehearsal stopped, its run failed: %s", failed)
        return False
    return True


def built_in_graph() -> Any:
    """The rehearsal's compiled graph: `chat` (async; LangChain's fake chat model when there is one) answers the
    messages and writes a custom event, `count` (sync) counts turns, and a conditional edge goes back to `chat` once."""
    from typing import Annotated, TypedDict

    from langgraph.config import get_stream_writer
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    answer = _chat_model()
    # Made by call: LangGraph reads its annotations as objects, which this module's postponed ones are not.
    State = TypedDict("State", {"messages": Annotated[list[Any], add_messages], "turns": int}, total=False)  # noqa: UP013

    async def chat(state: dict[str, Any]) -> dict[str, Any]:
        get_stream_writer()({"turn": state.get("turns", 0)})
        return {"messages": [await answer(state.get("messages", []))]}

    def count(state: dict[str, Any]) -> dict[str, Any]:
        return {"turns": state.get("turns", 0) + 1}

    def again(state: dict[str, Any]) -> str:
        return "chat" if state.get("turns", 0) < 2 else END

    # Its nodes take the state as a dict (a TypedDict made in here cannot annotate them: LangGraph resolves their
    # annotations in this module's globals), which LangGraph's types do not allow.
    builder: Any = StateGraph(State)
    builder.add_node("chat", chat)
    builder.add_node("count", count)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", "count")
    builder.add_conditional_edges("count", again, ["chat", END])
    return builder.compile()


Answer = Callable[[list[Any]], Awaitable[Any]]


async def plain_answer(_messages: list[Any]) -> Any:
    return {"role": "assistant", "content": ANSWER}


def _chat_model() -> Answer:
    """What `chat` answers with: LangChain's GenericFakeChatModel, called as a node calls a model (its callbacks,
    streamed under the `messages` mode); a plain message where this LangChain has no such model."""
    try:
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage
    except ImportError as error:
        _log.warning("crewd fork server: the LangGraph rehearsal goes without a chat model: %r", error)
        return plain_answer

    async def fake(messages: list[Any]) -> Any:
        usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
        model = GenericFakeChatModel(messages=iter([AIMessage(content=f"{ANSWER} once", usage_metadata=usage)]))
        return await model.ainvoke(messages)

    return fake


def _run_rounds(graph: Any, sink: int) -> str | None:
    """The runs, each as `python -m crewd_runner` runs a request; None, or why one did not complete."""
    emitter = Emitter(os.dup(sink))
    try:
        for _ in range(ROUNDS):
            # A run of crewd's own API, then two of its LangGraph API in a thread: the first starts the thread, the
            # second goes on from the checkpoint the first left.
            checkpoint: object = None
            for in_thread in (False, True, True):
                request = _api_request(checkpoint) if in_thread else _plain_request()
                outcome = cli.run(lambda: (run_graph, graph), io.StringIO(json.dumps(request)), emitter)
                emitter.emit(outcome.event_type, outcome.data)
                if outcome.event_type != "run.completed":
                    return str(outcome.data.get("error", outcome.event_type))
                checkpoint = outcome.data.get("checkpoint")
    finally:
        emitter.close()
    return None


def _messages() -> list[dict[str, str]]:
    return [{"role": "user", "content": "Rehearse"}]


def _plain_request() -> dict[str, Any]:
    """A run of crewd's own API: `updates` and `custom`, no thread."""
    return {"run_id": "crewd-rehearsal", "input": {"messages": _messages()}, "thread": None, "command": None}


def _api_request(checkpoint: object) -> dict[str, Any]:
    """A run of crewd's LangGraph API in a thread: its stream request rides in the input, as crewd puts it."""
    stream = {"stream_mode": API_MODES, "config": {"configurable": {"rehearsal": True}}, "null_input": False}
    return {
        "run_id": "crewd-rehearsal",
        "input": {"messages": _messages(), "__langgraph__": stream},
        "thread": {"thread_id": THREAD_ID, "checkpoint": checkpoint},
        "command": None,
    }


def tracing_off() -> AbstractContextManager[None]:
    """LangSmith tracing off while it lasts, by LangSmith's own context: LangSmith then reads none of its settings
    (it caches what it reads, for the life of the process: a server's reading would be its children's)."""
    try:
        from langsmith.run_helpers import tracing_context
    except ImportError:
        # No LangSmith, no tracing (LangChain needs it to trace).
        return contextlib.nullcontext()
    return tracing_context(enabled=False)


@contextlib.contextmanager
def _warnings_unmarked() -> Iterator[None]:
    """Warnings ignored while it lasts: an ignored warning is not recorded as shown, so a run shows it as it would
    have (the filters are restored after, which also forgets what was recorded meanwhile)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _check_threads() -> None:
    if threading.active_count() != 1:
        names = ", ".join(thread.name for thread in threading.enumerate() if thread is not threading.main_thread())
        raise ThreadsLeft(f"the LangGraph rehearsal left threads running ({names}), which a fork would lose")
