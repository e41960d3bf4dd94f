"""The runner command that uses a fork server: `python -m crewd_runner.forkclient --socket PATH --graph|--crew|--flow T`.

To crewd it is an ordinary runner process: it hands its own standard input, output and error to the fork server,
which forks a child with the crew already imported; it forwards SIGTERM to the child's process group and ends as the
child ended. When no server answers on the socket, it runs the crew itself (`python -m crewd_runner`), paying the
import as usual.
"""

import argparse
import json
import os
import signal
import socket
import sys

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m crewd_runner.forkclient", description=__doc__.split("\n")[0])
    parser.add_argument("--socket", required=True)
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--crew", metavar="MODULE:ATTR")
    kind.add_argument("--flow", metavar="MODULE:ATTR")
    kind.add_argument("--graph", metavar="FILE.py:ATTR")
    return parser.parse_args(argv)


def connect(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def run_without_server(args):
    kind, target = next((name, value) for name, value in vars(args).items() if name != "socket" and value)
    os.execv(sys.executable, [sys.executable, "-m", "crewd_runner", f"--{kind}", target])


def hand_over(sock):
    header = json.dumps({"env": dict(os.environ), "cwd": os.getcwd()}).encode() + b"\n"
    socket.send_fds(sock, [header], [0, 1, 2])
    # The child holds the pipes now: crewd sees end of file when the child, not this process, closes them.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    os.close(devnull)


def follow(sock):
    """Forwards stop signals to the child's group; returns the server's exit message."""
    lines = sock.makefile("rb")
    started = json.loads(lines.readline() or b"{}")
    if "pid" not in started:
        print(f"crewd fork server refused the run: {started.get('error', 'no answer')}", file=sys.stderr)
        return {"exit_code": 1}
    pid = started["pid"]

    def forward(signum, _frame):
        try:
            os.killpg(pid, signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    return json.loads(lines.readline() or b'{"exit_code": 1}')


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sock = connect(args.socket)
    if sock is None:
        run_without_server(args)
    hand_over(sock)
    ended = follow(sock)
    if "signal" in ended:
        signal.signal(ended["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), ended["signal"])
    return ended.get("exit_code", 1)


if __name__ == "__main__":
    sys.exit(main())
