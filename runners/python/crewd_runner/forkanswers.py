"""crewd's answers to a fork server's run (`{"answer": …}` lines, store_channel), on their way to its child's standard
input: a pipe of the run's own, written without ever waiting, so that a child that does not read its answers never
stops the server's loop."""

from __future__ import annotations

import io
import os
import selectors
from typing import Any

# What a run's pipe holds at most while the run does not read it: past it, answers are dropped whole.
MAX_OUTGOING = 32 << 20


class AnswerPipe:
    """The server's end of a run's answer pipe, and what of crewd's answers is not yet in it. It is registered with
    the server's selector (as `ready`) while something is left to write."""

    def __init__(self, fd: int, selector: selectors.BaseSelector, ready: Any) -> None:
        os.set_blocking(fd, False)
        self._file: io.FileIO | None = io.FileIO(fd, "wb")
        self._selector = selector
        self._ready = ready
        self._outgoing = b""
        self._registered = False

    @property
    def file(self) -> io.FileIO | None:
        """The pipe's end itself: what a forked child closes (the server's selector is not the child's to change)."""
        return self._file

    def add(self, line: bytes) -> None:
        if self._file is None or len(self._outgoing) + len(line) + 1 > MAX_OUTGOING:
            return
        self._outgoing += line + b"\n"
        self.flush()

    def flush(self) -> None:
        """Writes what the pipe takes now; the rest waits until the selector finds the pipe writable."""
        if self._file is None:
            return
        try:
            while self._outgoing:
                written = self._file.write(self._outgoing)
                if not written:
                    break  # the pipe is full
                self._outgoing = self._outgoing[written:]
        except OSError:
            self.close()  # the child closed its standard input: no answer reaches it any more
            return
        if self._outgoing and not self._registered:
            self._selector.register(self._file, selectors.EVENT_WRITE, self._ready)
        elif not self._outgoing and self._registered:
            self._selector.unregister(self._file)
        self._registered = bool(self._outgoing)

    def close(self) -> None:
        if self._file is None:
            return
        if self._registered:
            self._selector.unregister(self._file)
            self._registered = False
        self._file.close()
        self._file = None
        self._outgoing = b""
