"""The runner command that uses a fork server: `python -m crewd_runner.forkclient --socket PATH --graph|--crew|--flow T`.

To crewd it is an ordinary runner process: it hands its own standard input, output and error and its working folder
to the fork server, which forks a child with the crew already imported; it passes SIGTERM, SIGINT and SIGHUP on to the
child's process group through the server (which may live in another PID namespace) and ends as the child ended. When
no server answers on the socket, it runs the crew itself (`python -m crewd_runner`), paying the import as usual.

It is on every run's path, so it starts as little Python as it can: crewd runs it as
`python -I -S .../crewd_runner/forkclient.py`, and it imports the C halves of json, socket and signal only (their
Python halves import enum and re, which cost more than all the rest of it).
"""

import _json
import _signal
import _socket
import os
import sys

KINDS = ("--crew", "--flow", "--graph")
USAGE = "usage: python -m crewd_runner.forkclient --socket PATH --crew|--flow MODULE:ATTR | --graph FILE.py:ATTR"
FORWARDED_SIGNALS = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)


def parse_args(argv):
    """(socket path, (kind, target)), parsed by hand for the same reason."""
    options = dict(zip(argv[::2], argv[1::2]))
    entries = [(name, value) for name, value in options.items() if name in KINDS]
    if len(argv) % 2 or set(options) - {"--socket", *KINDS} or "--socket" not in options or len(entries) != 1:
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    return options["--socket"], entries[0]


def connect(path):
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def run_without_server(entry):
    os.execv(sys.executable, [sys.executable, "-m", "crewd_runner", *entry])


def json_string(text):
    return _json.encode_basestring_ascii(text)


def request_header():
    env = ", ".join(f"{json_string(name)}: {json_string(value)}" for name, value in os.environ.items())
    return f'{{"env": {{{env}}}, "cwd": {json_string(os.getcwd())}}}\n'.encode()


def hand_over(sock):
    folder = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2, folder))
    sock.sendmsg([request_header()], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    os.close(folder)
    # The child holds the pipes now: crewd sees end of file when the child, not this process, closes them.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    os.close(devnull)


def parse_answer(line):
    """The server's answers are flat: `{"pid"|"exit_code"|"signal": N}` or `{"error": "…"}`."""
    text = line.decode("utf-8", "replace").strip()
    if not (text.startswith("{") and text.endswith("}")):
        return {}
    key, _, value = text[1:-1].partition(":")
    key, value = key.strip().strip('"'), value.strip()
    if value.startswith('"'):
        return {key: _json.scanstring(value, 1)[0]}
    try:
        return {key: int(value)}
    except ValueError:
        return {}


class Answers:
    """The server's answer lines, one at a time; {} once it hung up."""

    def __init__(self, sock):
        self._sock = sock
        self._buffer = b""

    def next(self):
        while b"\n" not in self._buffer:
            data = self._sock.recv(4096)
            if not data:
                return {}
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        return parse_answer(line)


def follow(sock):
    """Passes stop signals on to the child's group; returns the server's exit message."""
    answers = Answers(sock)
    started = answers.next()
    if "pid" not in started:
        print(f"crewd fork server refused the run: {started.get('error', 'no answer')}", file=sys.stderr)
        return {"exit_code": 1}

    def forward(signum, _frame):
        try:
            sock.sendall(f'{{"signal": {int(signum)}}}\n'.encode())
        except OSError:
            pass

    for signum in FORWARDED_SIGNALS:
        _signal.signal(signum, forward)
    return answers.next() or {"exit_code": 1}


def main(argv=None):
    socket_path, entry = parse_args(sys.argv[1:] if argv is None else argv)
    sock = connect(socket_path)
    if sock is None:
        run_without_server(entry)
    hand_over(sock)
    ended = follow(sock)
    if "signal" in ended:
        _signal.signal(ended["signal"], _signal.SIG_DFL)
        os.kill(os.getpid(), ended["signal"])
    return ended.get("exit_code", 1)


if __name__ == "__main__":
    sys.exit(main())
