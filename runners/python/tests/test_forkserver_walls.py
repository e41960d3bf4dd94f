"""The fork server's walls (CONTRACTS §12 "Fork servers"): only a peer that proves it is crewd gets a run."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest

from conftest import PROJECTS, request, runner_env
from forkserver_support import SECRET, graph_server, run_forked, socket_path, start_server  # noqa: F401 (fixtures)


def test_a_connection_without_the_secret_runs_nothing_and_is_closed_without_an_answer(socket_path, tmp_path):
    server = start_server("graph", "env_graph.py:graph", socket_path, stderr=subprocess.PIPE)
    try:
        for secret in (None, "00" * 32, SECRET[:-2]):
            header = {"env": runner_env(), "cwd": str(tmp_path), "stdin": json.dumps(request({"mark": True}))}
            if secret is not None:
                header["secret"] = secret
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(socket_path))
            sock.sendall(json.dumps(header).encode() + b"\n")
            sock.settimeout(30)

            assert sock.makefile("rb").read() == b""
            sock.close()
        assert run_forked(socket_path, tmp_path, request()).last["type"] == "run.completed"
    finally:
        server.terminate()
        server.wait(10)

    assert not (tmp_path / "here.txt").exists()
    refusals = [line for line in server.stderr.read().decode().splitlines() if "was refused" in line]
    assert len(refusals) == 3 and all("does not carry the server's secret" in line for line in refusals)


def test_a_server_without_its_secret_on_standard_input_does_not_start(socket_path):
    command = [sys.executable, "-m", "crewd_runner.forkserver", "--graph", "env_graph.py:graph"]
    started = subprocess.run(
        [*command, "--socket", str(socket_path)], cwd=PROJECTS, env=runner_env(), input=b"", capture_output=True
    )

    assert started.returncode != 0
    assert b"standard input must start with a secret of 32 bytes in hex" in started.stderr
    assert not socket_path.exists()


def test_a_peer_of_another_user_is_refused_even_with_the_secret(tmp_path):
    python = "/usr/bin/python3"
    if os.getuid() != 0 or not os.path.exists(python):
        pytest.skip("connecting as another user needs root and a Python that user can run")
    # A folder the other user can reach: the server's socket is the only wall left.
    reachable = tempfile.mkdtemp(prefix="crewd-peer-test-")
    os.chmod(reachable, 0o777)
    socket_path = os.path.join(reachable, "s")
    server = start_server("graph", "env_graph.py:graph", socket_path, stderr=subprocess.PIPE)
    connect = (
        "import socket, sys\n"
        "sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "sock.connect(sys.argv[1])\n"
        "try:\n"
        "    sock.sendall(sys.argv[2].encode() + b'\\n')\n"
        "    sys.stdout.write(repr(sock.makefile('rb').read()))\n"
        "except (BrokenPipeError, ConnectionResetError):\n"  # closed before (or while) it read the request
        "    sys.stdout.write(repr(b''))\n"
    )
    header = {"secret": SECRET, "env": runner_env(), "cwd": str(tmp_path), "stdin": json.dumps(request({"mark": True}))}
    try:
        os.chmod(socket_path, 0o777)
        answered = subprocess.run(
            [python, "-c", connect, socket_path, json.dumps(header)], user=65534, capture_output=True, text=True
        )
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(reachable, ignore_errors=True)

    assert answered.stdout == "b''", answered.stderr
    assert not (tmp_path / "here.txt").exists()
    assert "the peer runs as user 65534, not as this server's user 0" in server.stderr.read().decode()


def test_a_request_without_its_fields_or_with_others_is_refused_with_the_reason(graph_server):
    answers = []
    for header in ({"secret": SECRET, "env": {}}, {"secret": SECRET, "env": {}, "cwd": "/", "stdin": "", "more": 1}):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(graph_server))
        sock.sendall(json.dumps(header).encode() + b"\n")
        answers.append(sock.makefile("rb").read())
        sock.close()

    fields = "['cwd', 'env', 'secret', 'stdin']"
    assert answers == [
        b"\0{\"error\": \"the request has the fields ['env', 'secret'], not " + fields.encode() + b'"}\n',
        b"\0{\"error\": \"the request has the fields ['cwd', 'env', 'more', 'secret', 'stdin'], not "
        + fields.encode()
        + b'"}\n',
    ]


def test_lines_a_run_writes_on_its_report_socket_are_passed_over_and_the_server_goes_on(socket_path):
    # A run's crew may write anything on the socket its child reports on: a line that is no report is not one.
    server = start_server("graph", "junk_graph.py:graph", socket_path)
    try:
        results = [run_forked(socket_path, PROJECTS, request()) for _ in range(3)]
    finally:
        server.terminate()
        server.wait(10)

    for result in results:
        assert result.returncode == 0, result.stderr
        assert result.last["type"] == "run.completed"
    # Each run was taken by a child forked ahead, which holds its report socket: the junk reached the server.
    assert [result.last["data"]["output"]["written"] for result in results] == [1, 1, 1]
