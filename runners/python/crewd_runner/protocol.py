"""Protocol lines on a private copy of the original standard output (docs/runner-protocol.md)."""

import json
import os
import threading

from .jsonsafe import to_jsonable


class Emitter:
    """Writes `{"type", "data"}` lines to a file descriptor that the crew's own code never sees."""

    def __init__(self, fd):
        self._file = os.fdopen(fd, "w", encoding="utf-8", closefd=True)
        self._lock = threading.Lock()
        self._closed = False

    def emit(self, event_type, data):
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

    def log(self, message, **fields):
        self.emit("log", {"message": message, **fields})

    def close(self):
        with self._lock:
            self._closed = True
            self._file.close()
