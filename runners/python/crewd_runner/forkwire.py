"""What crosses a run's connection to the fork server: the request header, signal lines, the server's last words."""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import signal
import socket
import struct
import sys
from typing import TextIO

from .forkmessages import Exited, Final, Refused, RunRequest, Signal, parse

# The header carries the run's input, thread values and checkpoint.
HEADER_LIMIT = 256 << 20
SIGNALS_FROM_CLIENTS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL}
HEADER_FIELDS = {"secret", "env", "cwd", "stdin"}
SECRET_BYTES = 32


class NotCrewd(Exception):
    """A connection that did not prove it is crewd's: it is closed without an answer and nothing runs."""


def read_secret(stream: TextIO) -> bytes:
    """The server's secret, the first line crewd writes on its standard input: 32 bytes in hex."""
    line = stream.readline().strip()
    try:
        secret = bytes.fromhex(line)
    except ValueError:
        secret = b""
    if len(secret) != SECRET_BYTES:
        raise SystemExit(f"crewd fork server: standard input must start with a secret of {SECRET_BYTES} bytes in hex")
    return line.encode()


def check_peer(connection: socket.socket) -> None:
    """The process at the other end runs as this server's user (SO_PEERCRED), or NotCrewd."""
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", credentials)
    if uid != os.getuid():
        raise NotCrewd(f"the peer runs as user {uid}, not as this server's user {os.getuid()}")


def receive_request(connection: socket.socket, seconds: float, secret: bytes) -> tuple[RunRequest, bytes, bytes]:
    """The request (its header holds `secret`, the server's; `env`, names to strings; `cwd` and `stdin`, strings), the
    header's line, and what came after it. A header that does not carry the secret raises NotCrewd. A header that has
    not come whole within `seconds` is refused: the server reads it in its one loop, which a connection that sends
    nothing would otherwise stop."""
    connection.settimeout(seconds)
    try:
        return _read_request(connection, secret)
    except TimeoutError:
        raise ValueError(f"the request header did not come within {seconds:g} seconds") from None
    finally:
        connection.settimeout(None)


def admit(
    listener: socket.socket, seconds: float, secret: bytes, who: str
) -> tuple[socket.socket, RunRequest, bytes, bytes] | None:
    """The next connection with its request, header line and what came after it; None for one that was turned away.
    One that did not prove it is crewd's is closed without an answer (`who` names the server on its standard error);
    one whose request is bad is told why, then closed."""
    connection, _ = listener.accept()
    try:
        check_peer(connection)
        request, line, rest = receive_request(connection, seconds, secret)
    except NotCrewd as refused:
        print(f"{who}: a connection was refused and closed: {refused}", file=sys.__stderr__, flush=True)
        connection.close()
        return None
    except (OSError, ValueError) as error:
        send_final(connection, Refused(str(error)))
        connection.close()
        return None
    return connection, request, line, rest


def _read_request(connection: socket.socket, secret: bytes) -> tuple[RunRequest, bytes, bytes]:
    chunks: list[bytes] = []
    size = 0
    while not chunks or b"\n" not in chunks[-1]:
        more = connection.recv(1 << 20)
        if not more:
            raise ValueError("the request header ended early")
        chunks.append(more)
        size += len(more)
        if size > HEADER_LIMIT:
            raise ValueError(f"the request header is longer than {HEADER_LIMIT} bytes")
    line, _, rest = b"".join(chunks).partition(b"\n")
    try:
        header = json.loads(line)
    except ValueError:
        raise NotCrewd("the request is not JSON") from None
    given = header.get("secret") if isinstance(header, dict) else None
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), secret):
        raise NotCrewd("the request does not carry the server's secret")
    if set(header) != HEADER_FIELDS:
        raise ValueError(f"the request has the fields {sorted(header)}, not {sorted(HEADER_FIELDS)}")
    return RunRequest.from_header(header), line, rest


def exit_message(status: int) -> Final:
    if os.WIFSIGNALED(status):
        return Signal(os.WTERMSIG(status))
    return Exited(os.WEXITSTATUS(status))


def send_final(connection: socket.socket, message: Final) -> None:
    """The server's last words on a connection, after everything the child wrote: NUL, then a JSON line. A client
    that has gone away misses them (it is gone: nothing is left to tell)."""
    with contextlib.suppress(OSError):
        connection.sendall(b"\0" + message.encode())


def forward_signal(pid: int, line: bytes) -> None:
    """A `{"signal": N}` line from crewd, for the run's process group; any other line, or another signal, is not
    crewd's to send and is ignored."""
    message = parse(line)
    if isinstance(message, Signal) and message.signum in SIGNALS_FROM_CLIENTS:
        kill_group(pid, message.signum)


def whole_lines(pending: bytearray, data: bytes) -> list[bytes]:
    """`data` from crewd added to `pending`; the lines it completed, while the start of the next stays in `pending`."""
    pending += data
    if b"\n" not in data:
        return []  # an answer may come in many pieces: split once its line is whole
    *lines, rest = bytes(pending).split(b"\n")
    pending[:] = rest
    return lines


def is_answer(line: bytes) -> bool:
    """crewd's answer to a run's call (`{"answer": …}`, store_channel), which goes to the run, not to the server."""
    return line.startswith(b'{"answer":')


def kill_group(pid: int, signum: int) -> None:
    """The group is gone already (its run ended), or is no longer this user's: nothing is left to signal."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)
