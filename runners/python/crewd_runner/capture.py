"""Sends the crew's own output (print, C-level writes to fd 1, child processes, logging) to crewd as `log` events.

The protocol lines go to a private duplicate of the original standard output (see protocol.Emitter), so nothing the
crew writes can break a protocol line or be mistaken for one.
"""

import io
import logging
import os
import re
import sys
import threading

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

    def __init__(self, emitter, stream, fd):
        super().__init__()
        self._emitter = emitter
        self._stream = stream
        self._fd = fd
        self._pending = ""
        self._lock = threading.Lock()

    @property
    def encoding(self):
        return "utf-8"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._fd

    @property
    def buffer(self):
        return _BytesToText(self)

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            complete, newline, self._pending = (self._pending + text).rpartition("\n")
        if newline:
            self._send(complete)
        return len(text)

    def flush(self):
        with self._lock:
            rest, self._pending = self._pending, ""
        self._send(rest)

    def _send(self, block):
        message = readable(block)
        if message:
            self._emitter.log(message, stream=self._stream)


class _BytesToText:
    """`sys.stdout.buffer` for code that writes bytes."""

    def __init__(self, text_stream):
        self._text = text_stream

    def write(self, data):
        self._text.write(bytes(data).decode("utf-8", errors="replace"))
        return len(data)

    def flush(self):
        self._text.flush()


class ProtocolLogHandler(logging.Handler):
    """Records of the logging module, as `log` events with their level and logger name."""

    def __init__(self, emitter):
        super().__init__()
        self._emitter = emitter
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record):
        try:
            message = self.format(record)
            self._emitter.log(message, stream="logging", level=record.levelname, logger=record.name)
        except Exception:
            self.handleError(record)


class OutputCapture:
    """Points fd 1 and sys.stdout away from the protocol for the life of a run."""

    def __init__(self, emitter):
        self._emitter = emitter
        self._pump = None
        self._handler = ProtocolLogHandler(emitter)

    def start(self):
        read_fd, write_fd = os.pipe()
        os.dup2(write_fd, 1)
        os.close(write_fd)
        self._pump = threading.Thread(target=self._pump_lines, args=(read_fd,), daemon=True)
        self._pump.start()
        sys.stdout = LogWriter(self._emitter, "stdout", 1)
        logging.getLogger().addHandler(self._handler)

    def stop(self):
        """Flushes what the crew wrote so far; every `log` event is out before the result line."""
        sys.stdout.flush()
        logging.getLogger().removeHandler(self._handler)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        # A child process the crew left running may still hold the pipe; its output is not waited for.
        self._pump.join(_DRAIN_SECONDS)

    def _pump_lines(self, read_fd):
        with os.fdopen(read_fd, "rb") as pipe:
            for raw in pipe:
                line = readable(raw.decode("utf-8", errors="replace"))
                if line:
                    self._emitter.log(line, stream="stdout")
