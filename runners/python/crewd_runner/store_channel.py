"""A run's calls to crewd and their answers (docs/runner-protocol.md, "Calls").

A call is a protocol line, `{"type": "store.call", "data": {"id", "op", ...}}`; crewd answers it with a line
`{"answer": {"id", "result"} | {"id", "error"}}` on the channel it keeps to the run: the run's standard input after
its request (a runner process, a fork server's child, whose server hands it crewd's lines), or, in a worker, the
run's connection, whose lines the worker hands to `Answers.deliver`. crewd runs each call for the run's own
organization: nothing in a line names one.
"""

from __future__ import annotations

import contextvars
import json
import select
import threading
from collections.abc import Callable
from typing import Any, TextIO

from .protocol import EventSink

# A runner's line at most (crewd makes a longer one a `log` notice, and the call would never be answered).
MAX_CALL_BYTES = (1 << 20) - 1024
# An answer line crewd sends at most, with room to spare: a longer line is not crewd's.
MAX_ANSWER_BYTES = 9 << 20
NO_CHANNEL = "crewd keeps no channel open to this run (its standard input is closed, or the run ended)"


class CallFailed(Exception):
    """crewd refused the call, or could not run it: its message says why."""


class ChannelClosed(CallFailed):
    """No answer can come: the run's channel to crewd is closed (or there never was one)."""


class _Waiter:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: dict[str, Any] | None = None


class Answers:
    """The run's calls waiting for their answers, by id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiter] = {}
        self._next = 0
        self._closed = False
        # What starts reading the answers, on the run's first call (read_answers).
        self._start: Callable[[], None] | None = None
        self._starting = threading.Lock()

    def start_on_first_call(self, start: Callable[[], None]) -> None:
        self._start = start

    def call(self, sink: EventSink, fields: dict[str, Any]) -> Any:
        """Sends the call and waits for its answer: its result, or CallFailed."""
        with self._starting:
            start, self._start = self._start, None
            if start is not None:
                start()
        waiter = _Waiter()
        with self._lock:
            if self._closed:
                raise ChannelClosed(f"{NO_CHANNEL}: its store is out of reach")
            self._next += 1
            call_id = str(self._next)
            self._waiting[call_id] = waiter
        data = {"id": call_id, **fields}
        try:
            if len(json.dumps(data, ensure_ascii=False).encode()) > MAX_CALL_BYTES:
                raise CallFailed(f"a store call is limited to {MAX_CALL_BYTES} bytes of JSON: store less at once")
            sink.emit("store.call", data)
            waiter.done.wait()
        finally:
            with self._lock:
                self._waiting.pop(call_id, None)
        answer = waiter.answer
        if answer is None:
            raise ChannelClosed(f"the store call was not answered: {NO_CHANNEL}")
        if "error" in answer:
            raise CallFailed(str(answer["error"]))
        return answer.get("result")

    def deliver(self, line: str | bytes) -> None:
        """A line from crewd: the answer of a waiting call; anything else is passed over."""
        if len(line) > MAX_ANSWER_BYTES:
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        answer = message.get("answer") if isinstance(message, dict) else None
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
            return
        with self._lock:
            waiter = self._waiting.get(answer["id"])
        if waiter is not None and not waiter.done.is_set():
            waiter.answer = answer
            waiter.done.set()

    def close(self) -> None:
        """No answer comes any more: each waiting call fails."""
        with self._lock:
            self._closed = True
            waiting = list(self._waiting.values())
        for waiter in waiting:
            waiter.done.set()


# The run's answers, where its store finds them: set by the runner (cli) or the worker for the run's context.
current: contextvars.ContextVar[Answers | None] = contextvars.ContextVar("crewd_answers", default=None)


def read_answers(lines: TextIO, answers: Answers) -> None:
    """Hands each line of `lines` (the run's standard input after its request) to `answers` in a thread of its own,
    until the lines end; then no answer comes any more. The thread starts on the run's first call (most runs make
    none, and a thread costs a forked child about a quarter of a millisecond of CPU): what the input already holds
    then is read first, in the caller's thread, so that an input that has ended closes the channel before the call
    is sent, as it would have with a thread started with the run."""

    def read() -> None:
        try:
            for line in lines:
                answers.deliver(line)
        except (OSError, ValueError):
            pass
        finally:
            answers.close()

    def start() -> None:
        try:
            while select.select([lines], [], [], 0)[0]:
                line = lines.readline()
                if not line:
                    answers.close()
                    return
                answers.deliver(line)
        except (OSError, ValueError):
            pass  # not a file that select takes: the thread reads it, as it would have
        threading.Thread(target=read, name="crewd answers", daemon=True).start()

    answers.start_on_first_call(start)
