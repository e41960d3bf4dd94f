"""Protocol lines on a private copy of the original standard output (docs/runner-protocol.md)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Protocol

from .jsonsafe import to_jsonable

# The run's request (docs/runner-protocol.md): run_id, input, thread, command.
Request = dict[str, Any]


class EventSink(Protocol):
    """Where a run's events go: the Emitter, or what stands in front of it."""

    def emit(self, event_type: str, data: object) -> None: ...


class Emitter:
    """Writes `{"type", "data"}` lines to a file descriptor that the crew's own code never sees."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "w", encoding="utf-8", closefd=True)
        self._lock = threading.Lock()
        self._closed = False

    def emit(self, event_type: str, data: object) -> None:
        line = json.dumps(
            {"type": event_type, "data": to_jsonable(data)},
            ensure_ascii=False,
            allow_nan=False,
        )
        with self._lock:
            if self._closed:
                return
            self._file.write(line + "\n")
            self._file.flush()

    def log(self, message: str, **fields: object) -> None:
        self.emit("log", {"message": message, **fields})

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._file.close()
