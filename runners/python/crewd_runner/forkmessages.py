"""The lines that cross a fork server's sockets, as typed messages, and the one function that reads them.

Each is one JSON object on a line (docs/runner-protocol.md, "The Python fork server"):
- crewd -> server, after the request header: `{"signal": N}`, a signal for the run's process group (Signal);
- server -> a spare child, with the run's connection: `{"home": "...", "learn": bool}` (Handover);
- a spare child -> server, once its run is over: `{"learned": "<base64>"}` (Learned), then `{"exit_code": N}` (Exited);
- server -> crewd, its last words after a NUL byte: `{"exit_code": N}` (Exited), `{"signal": N}` (Signal: the child
  ended by that signal) or `{"error": "..."}` (Refused).
The request header itself (secret, env, cwd, stdin) is read strictly by forkwire.read_request, into a RunRequest.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunRequest:
    """What crewd asks a run with: its environment, working folder and what the runner reads on standard input."""

    env: dict[str, str]
    cwd: str
    stdin: str

    @staticmethod
    def from_header(header: dict[str, Any]) -> RunRequest:
        """The header's fields, checked: ValueError names the field that is wrong."""
        env = header.get("env")
        if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
            raise ValueError('the request needs "env", an object of strings')
        cwd, stdin = header.get("cwd"), header.get("stdin")
        if not isinstance(cwd, str) or not isinstance(stdin, str):
            raise ValueError('the request needs "cwd" and "stdin", strings')
        return RunRequest({str(name): value for name, value in env.items()}, cwd, stdin)


@dataclass(frozen=True)
class Signal:
    signum: int

    def encode(self) -> bytes:
        return _line({"signal": self.signum})


@dataclass(frozen=True)
class Handover:
    home: str
    learn: bool

    def encode(self) -> bytes:
        return _line({"home": self.home, "learn": self.learn})


@dataclass(frozen=True)
class Learned:
    """The pages a run wrote, as hot_pages.encode packs them."""

    ranges: bytes

    def encode(self) -> bytes:
        return _line({"learned": base64.b64encode(self.ranges).decode("ascii")})


@dataclass(frozen=True)
class Exited:
    code: int

    def encode(self) -> bytes:
        return _line({"exit_code": self.code})


@dataclass(frozen=True)
class Refused:
    error: str

    def encode(self) -> bytes:
        return _line({"error": self.error})


Message = Signal | Handover | Learned | Exited | Refused
Final = Exited | Signal | Refused


def parse(line: bytes) -> Message | None:
    """The message `line` holds, or None for anything else (not JSON, not an object, a field of the wrong type): a
    line may come from a run's crew, which could write anything on its sockets."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if _is_int(value.get("signal")):
        return Signal(value["signal"])
    if _is_int(value.get("exit_code")):
        return Exited(value["exit_code"])
    if isinstance(value.get("learned"), str):
        try:
            return Learned(base64.b64decode(value["learned"], validate=True))
        except binascii.Error:
            return None
    if isinstance(value.get("home"), str) and isinstance(value.get("learn"), bool):
        return Handover(value["home"], value["learn"])
    if isinstance(value.get("error"), str):
        return Refused(value["error"])
    return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _line(value: dict[str, object]) -> bytes:
    return json.dumps(value).encode() + b"\n"
