"""What crosses a run's connection to the fork server: the request header, signal lines, the server's last words."""

import json
import os
import signal

# The header carries the run's input, thread values and checkpoint.
HEADER_LIMIT = 256 << 20
SIGNALS_FROM_CLIENTS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL}


def receive_request(connection, seconds):
    """The header (`env`, names to strings; `cwd` and `stdin`, strings), its line, and what came after it. A header
    that has not come whole within `seconds` is refused: the server reads it in its one loop, which a connection
    that sends nothing (a run of the version itself could connect) would otherwise stop."""
    connection.settimeout(seconds)
    try:
        return _read_request(connection)
    except TimeoutError:
        raise ValueError(f"the request header did not come within {seconds:g} seconds") from None
    finally:
        connection.settimeout(None)


def _read_request(connection):
    chunks, size = [], 0
    while not chunks or b"\n" not in chunks[-1]:
        more = connection.recv(1 << 20)
        if not more:
            raise ValueError("the request header ended early")
        chunks.append(more)
        size += len(more)
        if size > HEADER_LIMIT:
            raise ValueError(f"the request header is longer than {HEADER_LIMIT} bytes")
    line, _, rest = b"".join(chunks).partition(b"\n")
    header = json.loads(line)
    env = header.get("env") if isinstance(header, dict) else None
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        raise ValueError('the request needs "env", an object of strings')
    if not isinstance(header.get("cwd"), str) or not isinstance(header.get("stdin"), str):
        raise ValueError('the request needs "cwd" and "stdin", strings')
    return header, line, rest


def exit_message(status):
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"exit_code": os.WEXITSTATUS(status)}


def send_final(connection, message):
    """The server's last words on a connection, after everything the child wrote: NUL, then a JSON line."""
    try:
        connection.sendall(b"\0" + json.dumps(message).encode() + b"\n")
    except OSError:
        pass


def forward_signal(pid, line):
    try:
        signum = int(json.loads(line).get("signal"))
    except (ValueError, TypeError, AttributeError):
        return
    if signum in SIGNALS_FROM_CLIENTS:
        kill_group(pid, signum)


def kill_group(pid, signum):
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
