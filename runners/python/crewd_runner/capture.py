"""Sends the crew's own output (print, C-level writes to fd 1, child processes, logging) to crewd as `log` events.

The protocol lines go to a private duplicate of the original standard output (see protocol.Emitter), so nothing the
crew writes can break a protocol line or be mistaken for one.
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys
import threading

from .protocol import Emitter

_DRAIN_SECONDS = 2.0
# Terminal escape sequences (colours, cursor moves, hyperlinks): CrewAI's verbose panels are full of them, and a log
# event is read in a browser or a log store, not a terminal.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def readable(text: str) -> str:
    """`text` without terminal escapes, trailing spaces or blank lines at either end; "" when nothing is left."""
    lines = [line.rstrip() for line in _ESCAPES.sub("", text).replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


class LogWriter(io.TextIOBase):
    """A text stream that turns the complete lines of each write into one `log` event: a panel that a library prints
    in one call (CrewAI's verbose output, a traceback) stays one message with its line breaks."""

    def __init__(self, emitter: Emitter, stream: str, fd: int) -> None:
        super().__init__()
        self._emitter = emitter
        self._stream = stream
        self._fd = fd
        self._pending = ""
        self._lock = threading.Lock()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # io.TextIOBase's is a read-only descriptor at run time
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fd

    @property
    def buffer(self) -> _BytesToText:
        return _BytesToText(self)

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            complete, newline, self._pending = (self._pending + text).rpartition("\n")
        if newline:
            self._send(complete)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            rest, self._pending = self._pending, ""
        self._send(rest)

    def _send(self, block: str) -> None:
        message = readable(block)
        if message:
            self._emitter.log(message, stream=self._stream)


class _BytesToText:
    """`sys.stdout.buffer` for code that writes bytes."""

    def __init__(self, text_stream: LogWriter) -> None:
        self._text = text_stream

    def write(self, data: bytes | bytearray) -> int:
        self._text.write(bytes(data).decode("utf-8", errors="replace"))
        return len(data)

    def flush(self) -> None:
        self._text.flush()


class ProtocolLogHandler(logging.Handler):
    """Records of the logging module, as `log` events with their level and logger name."""

    def __init__(self, emitter: Emitter) -> None:
        super().__init__()
        self._emitter = emitter
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            self._emitter.log(message, stream="logging", level=record.levelname, logger=record.name)
        except Exception:  # noqa: BLE001 (logging's convention: a handler reports its own failure, never raises it)
            self.handleError(record)


class OutputCapture:
    """Points fd 1 and sys.stdout away from the protocol for the life of a run."""

    def __init__(self, emitter: Emitter) -> None:
        self._emitter = emitter
        self._pump: threading.Thread | None = None
        self._handler = ProtocolLogHandler(emitter)

    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        os.dup2(write_fd, 1)
        os.close(write_fd)
        self._pump = threading.Thread(target=self._pump_lines, args=(read_fd,), daemon=True)
        self._pump.start()
        sys.stdout = LogWriter(self._emitter, "stdout", 1)
        logging.getLogger().addHandler(self._handler)

    def stop(self) -> None:
        """Flushes what the crew wrote so far; every `log` event is out before the result line."""
        sys.stdout.flush()
        logging.getLogger().removeHandler(self._handler)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        # A child process the crew left running may still hold the pipe; its output is not waited for.
        if self._pump is not None:
            self._pump.join(_DRAIN_SECONDS)

    def _pump_lines(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            for raw in pipe:
                line = readable(raw.decode("utf-8", errors="replace"))
                if line:
                    self._emitter.log(line, stream="stdout")
