"""Sends the crew's own output (print, C-level writes to fd 1, child processes, logging) to crewd as `log` events.

The protocol lines go to a private duplicate of the original standard output (see protocol.Emitter), so nothing the
crew writes can break a protocol line or be mistaken for one.
"""

import io
import logging
import os
import sys
import threading

_DRAIN_SECONDS = 2.0


class LogWriter(io.TextIOBase):
    """A text stream that turns each complete line into a `log` event."""

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
            lines = (self._pending + text).split("\n")
            self._pending = lines.pop()
        for line in lines:
            self._send(line)
        return len(text)

    def flush(self):
        with self._lock:
            rest, self._pending = self._pending, ""
        self._send(rest)

    def _send(self, line):
        line = line.rstrip("\r")
        if line.strip():
            self._emitter.log(line, stream=self._stream)


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
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if line.strip():
                    self._emitter.log(line, stream="stdout")
