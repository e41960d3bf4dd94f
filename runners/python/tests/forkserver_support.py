"""What the fork server's tests share: a server started as crewd starts it, and runs asked of it as crewd asks."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import PROJECTS, RunnerResult, runner_env

# What crewd gives each server on its standard input and sends with each request.
SECRET = "5e" * 32


def start_server(
    kind, target, socket_path, *options, env=None, stderr=None, module="crewd_runner.forkserver", cpus=None
):
    """A fork server (or, with `module` crewd_runner.worker, a worker) listening at `socket_path`; on `cpus` only when
    given."""
    server = subprocess.Popen(
        [sys.executable, "-m", module, f"--{kind}", target, "--socket", str(socket_path), *options],
        cwd=PROJECTS,
        env=runner_env(env),
        stdin=subprocess.PIPE,
        stderr=stderr,
        preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
    )
    server.stdin.write(f"{SECRET}\n".encode())
    server.stdin.close()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"fork server exited with {server.returncode}")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(socket_path))
            # A connection without a request is refused by the server; that proves it listens.
            probe.close()
            return server
        except OSError:
            time.sleep(0.1)
        finally:
            probe.close()
    raise AssertionError("fork server did not start listening")


@pytest.fixture
def socket_path(tmp_path):
    return tmp_path / "crew.sock"


@pytest.fixture(scope="module")
def graph_server(tmp_path_factory):
    """One server for a module's tests of what runs do in it (each run has a folder of its own): a graph server's
    start costs about 2 s of CPU, its imports."""
    socket_path = tmp_path_factory.mktemp("graph-server") / "crew.sock"
    server = start_server("graph", "env_graph.py:graph", socket_path)
    yield socket_path
    server.terminate()
    server.wait(10)


class Connection:
    """One run as crewd asks the server for it: the header line, then the child's output and the server's last words."""

    def __init__(self, socket_path, cwd, run_request, env=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(socket_path))
        header = {"secret": SECRET, "env": runner_env(env), "cwd": str(cwd), "stdin": json.dumps(run_request)}
        self.sock.sendall(json.dumps(header).encode() + b"\n")

    def signal(self, signum):
        self.sock.sendall(json.dumps({"signal": signum}).encode() + b"\n")

    def finish(self):
        """(what the child wrote, the server's final message)."""
        self.sock.settimeout(120)
        received = b""
        while data := self.sock.recv(65536):
            received += data
        self.sock.close()
        output, nul, final = received.partition(b"\0")
        assert nul, f"the server never sent its final message: {received!r}"
        return output.decode(), json.loads(final)


def run_forked(socket_path, cwd, run_request, env=None):
    output, final = Connection(socket_path, cwd, run_request, env).finish()
    code = final.get("exit_code", -final.get("signal", 0))
    return RunnerResult(subprocess.CompletedProcess([], code, output, json.dumps(final)))
