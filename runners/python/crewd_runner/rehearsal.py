"""What the CrewAI and LangGraph rehearsals share: their output discarded while they run, and the error that stops a
fork server whose rehearsal left threads running."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


class ThreadsLeft(RuntimeError):
    """The rehearsal's threads could not all be stopped: a fork would lose them mid-work."""


@contextlib.contextmanager
def output_discarded() -> Iterator[int]:
    """Descriptors 1 and 2 on /dev/null while it lasts; yields /dev/null's descriptor."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield devnull
    finally:
        for stream in (sys.stdout, sys.stderr):
            # What the rehearsal left in Python's buffers goes to /dev/null with it; a closed stream has none.
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        for fd, target in zip(saved, (1, 2), strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.close(devnull)
