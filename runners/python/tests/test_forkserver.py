"""The fork server: the crew imported once, a forked child per run that behaves as `python -m crewd_runner` does."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import PROJECTS, RUNNER_ROOT, RunnerResult, request, runner_env


def start_server(kind, target, socket_path):
    server = subprocess.Popen(
        [sys.executable, "-m", "crewd_runner.forkserver", f"--{kind}", target, "--socket", str(socket_path)],
        cwd=PROJECTS,
        env=runner_env(),
    )
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


@pytest.fixture
def graph_server(socket_path):
    server = start_server("graph", "env_graph.py:graph", socket_path)
    yield socket_path
    server.terminate()
    server.wait(10)


# As crewd starts it: a script, isolated, without site.
CLIENT = [sys.executable, "-I", "-S", str(RUNNER_ROOT / "crewd_runner" / "forkclient.py")]


def client(socket_path, kind, target, cwd, env=None):
    return subprocess.Popen(
        [*CLIENT, "--socket", str(socket_path), f"--{kind}", target],
        cwd=cwd,
        env=runner_env(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_client(socket_path, kind, target, cwd, run_request, env=None):
    process = client(socket_path, kind, target, cwd, env)
    stdout, stderr = process.communicate(json.dumps(run_request), timeout=120)
    return RunnerResult(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))


def test_each_run_is_a_forked_child_with_the_run_environment_and_folder(graph_server, tmp_path):
    tmps = []
    for run_id in ("run_1", "run_2"):
        result = run_client(graph_server, "graph", "env_graph.py:graph", tmp_path, request(), {"CREWD_RUN_ID": run_id})

        assert result.returncode == 0, result.stderr
        output = result.last["data"]["output"]
        assert {key: output[key] for key in ("run_id", "cwd")} == {"run_id": run_id, "cwd": str(tmp_path)}
        tmps.append(output["tmp"])

    # Each run had a TMPDIR of its own, gone once it ended.
    assert len(set(tmps)) == 2
    assert all(os.path.basename(tmp).startswith("crewd-run-") and not os.path.exists(tmp) for tmp in tmps)


def test_a_tmpdir_of_the_run_environment_is_kept(graph_server, tmp_path):
    result = run_client(graph_server, "graph", "env_graph.py:graph", tmp_path, request(), {"TMPDIR": str(tmp_path)})

    assert result.last["data"]["output"]["tmp"] == str(tmp_path)


def send_raw_request(socket_path, header, fds):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(socket_path))
    socket.send_fds(sock, [json.dumps(header).encode() + b"\n"], fds)
    return sock.makefile("rb")


def test_a_folder_the_server_cannot_see_by_its_path_is_entered_through_its_descriptor(graph_server, tmp_path):
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    os.write(stdin_write, json.dumps(request({"mark": True})).encode())
    os.close(stdin_write)
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    header = {"env": runner_env(), "cwd": str(tmp_path / "not-there")}

    answers = send_raw_request(graph_server, header, [stdin_read, stdout_write, 2, folder])
    for fd in (stdin_read, stdout_write, folder):
        os.close(fd)

    assert "pid" in json.loads(answers.readline())
    assert json.loads(answers.readline()) == {"exit_code": 0}
    with os.fdopen(stdout_read) as stdout:
        assert json.loads(stdout.read().splitlines()[-1])["type"] == "run.completed"
    assert (tmp_path / "here.txt").exists()


def test_removing_its_socket_ends_an_idle_server(socket_path):
    server = start_server("graph", "env_graph.py:graph", socket_path)
    try:
        os.unlink(socket_path)
        assert server.wait(20) == 0
    finally:
        server.kill()


def test_without_a_server_the_client_runs_the_crew_itself(socket_path, tmp_path):
    result = run_client(socket_path, "graph", "env_graph.py:graph", PROJECTS, request(), {"CREWD_RUN_ID": "run_cold"})

    assert result.returncode == 0, result.stderr
    assert result.last["data"]["output"]["run_id"] == "run_cold"


def wait_for_pid(path):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError("the child never started its node")


def is_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pid):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and is_alive(pid):
        time.sleep(0.05)
    return not is_alive(pid)


def test_sigterm_to_the_client_stops_the_child_and_the_client_ends_by_that_signal(graph_server, tmp_path):
    process = client(graph_server, "graph", "env_graph.py:graph", tmp_path)
    process.stdin.write(json.dumps(request({"sleep": 60})))
    process.stdin.close()
    child = wait_for_pid(tmp_path / "child.pid")

    process.send_signal(signal.SIGTERM)

    assert process.wait(20) == -signal.SIGTERM
    assert wait_gone(child)


def test_a_client_killed_outright_takes_its_child_with_it(graph_server, tmp_path):
    process = client(graph_server, "graph", "env_graph.py:graph", tmp_path)
    process.stdin.write(json.dumps(request({"sleep": 60})))
    process.stdin.close()
    child = wait_for_pid(tmp_path / "child.pid")

    process.kill()
    process.wait(20)

    assert wait_gone(child)


def test_a_crew_runs_in_a_forked_child_with_its_events(socket_path):
    server = start_server("crew", "crews:echo_crew", socket_path)
    try:
        results = [
            run_client(socket_path, "crew", "crews:echo_crew", PROJECTS, request({"topic": "bees"})) for _ in range(2)
        ]
    finally:
        server.terminate()
        server.wait(10)

    for result in results:
        assert result.returncode == 0, result.stderr
        assert result.of_type("task.started") == [{"task": "write", "agent": "Writer"}]
        assert result.last["data"]["output"]["raw"] == "one line"


def test_the_client_refuses_arguments_it_does_not_know(socket_path):
    done = subprocess.run([*CLIENT, "--socket", str(socket_path), "--graph"], capture_output=True, text=True)

    assert done.returncode == 2
    assert done.stderr.startswith("usage:")
