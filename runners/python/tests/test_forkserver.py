"""The fork server: the crew imported once, a forked child per run that behaves as `python -m crewd_runner` does."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import PROJECTS, RunnerResult, request, runner_env


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


def client(socket_path, kind, target, cwd, env=None):
    return subprocess.Popen(
        [sys.executable, "-m", "crewd_runner.forkclient", "--socket", str(socket_path), f"--{kind}", target],
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
    for run_id in ("run_1", "run_2"):
        result = run_client(graph_server, "graph", "env_graph.py:graph", tmp_path, request(), {"CREWD_RUN_ID": run_id})

        assert result.returncode == 0, result.stderr
        assert result.last == {"type": "run.completed", "data": {"output": {"run_id": run_id, "cwd": str(tmp_path)}}}


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
