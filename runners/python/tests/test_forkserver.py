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


def start_server(kind, target, socket_path, *options, env=None):
    server = subprocess.Popen(
        [sys.executable, "-m", "crewd_runner.forkserver", f"--{kind}", target, "--socket", str(socket_path), *options],
        cwd=PROJECTS,
        env=runner_env(env),
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


class Connection:
    """One run as crewd asks the server for it: the header line, then the child's output and the server's last words."""

    def __init__(self, socket_path, cwd, run_request, env=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(socket_path))
        header = {"env": runner_env(env), "cwd": str(cwd), "stdin": json.dumps(run_request)}
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


def test_each_run_is_a_forked_child_with_the_run_environment_and_folder(graph_server, tmp_path):
    tmps = []
    for run_id in ("run_1", "run_2"):
        result = run_forked(graph_server, tmp_path, request(), {"CREWD_RUN_ID": run_id})

        assert result.returncode == 0, result.stderr
        output = result.last["data"]["output"]
        assert {key: output[key] for key in ("run_id", "cwd")} == {"run_id": run_id, "cwd": str(tmp_path)}
        tmps.append(output["tmp"])

    # Each run had a TMPDIR of its own, removed right after its end was sent.
    assert len(set(tmps)) == 2
    assert all(os.path.basename(tmp).startswith("crewd-run-") for tmp in tmps)
    assert all(wait_until(lambda tmp=tmp: not os.path.exists(tmp)) for tmp in tmps)


def test_a_tmpdir_of_the_run_environment_is_kept(graph_server, tmp_path):
    result = run_forked(graph_server, tmp_path, request(), {"TMPDIR": str(tmp_path)})

    assert result.last["data"]["output"]["tmp"] == str(tmp_path)


def test_a_relative_path_is_written_in_the_run_folder(graph_server, tmp_path):
    result = run_forked(graph_server, tmp_path, request({"mark": True}))

    assert result.last["type"] == "run.completed"
    assert (tmp_path / "here.txt").exists()


def test_a_request_without_its_fields_is_refused_with_the_reason(graph_server):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(graph_server))
    sock.sendall(b'{"env": {}}\n')

    assert sock.makefile("rb").read() == b'\0{"error": "the request needs \\"cwd\\" and \\"stdin\\", strings"}\n'
    sock.close()


def test_a_connection_that_sends_no_request_is_refused_in_time_and_holds_up_no_run(socket_path, tmp_path):
    server = start_server("graph", "env_graph.py:graph", socket_path, "--header-seconds", "0.3")
    try:
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.connect(str(socket_path))
        silent.settimeout(10)
        silent.sendall(b'{"env": {}')  # and never the rest of the line

        started = time.monotonic()
        assert run_forked(socket_path, tmp_path, request()).last["type"] == "run.completed"
        assert time.monotonic() - started < 10
        refusal = b'\0{"error": "the request header did not come within 0.3 seconds"}\n'
        assert silent.makefile("rb").read() == refusal
        silent.close()
    finally:
        server.terminate()
        server.wait(10)


def test_removing_its_socket_ends_an_idle_server(socket_path):
    server = start_server("graph", "env_graph.py:graph", socket_path)
    try:
        os.unlink(socket_path)
        assert server.wait(20) == 0
    finally:
        server.kill()


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


def wait_until(condition, seconds=5):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def wait_gone(pid):
    return wait_until(lambda: not is_alive(pid), seconds=10)


def test_a_signal_line_stops_the_child_and_the_server_reports_that_signal(graph_server, tmp_path):
    connection = Connection(graph_server, tmp_path, request({"sleep": 60}))
    child = wait_for_pid(tmp_path / "child.pid")

    connection.signal(signal.SIGTERM)

    assert connection.finish()[1] == {"signal": signal.SIGTERM}
    assert wait_gone(child)


def test_a_connection_that_hangs_up_takes_its_child_with_it(graph_server, tmp_path):
    connection = Connection(graph_server, tmp_path, request({"sleep": 60}))
    child = wait_for_pid(tmp_path / "child.pid")

    connection.sock.close()

    assert wait_gone(child)


def test_a_process_the_run_left_in_its_group_ends_with_the_run(graph_server, tmp_path):
    result = run_forked(graph_server, tmp_path, request({"leave_process": True}))

    assert result.returncode == 0 and result.last["type"] == "run.completed"
    assert wait_gone(int((tmp_path / "left.pid").read_text()))


def test_a_thread_still_writing_after_the_run_never_reaches_past_the_server_s_last_words(graph_server, tmp_path):
    for _ in range(3):
        output, final = Connection(graph_server, tmp_path, request({"chatter": True})).finish()

        assert final == {"exit_code": 0}
        assert '"type": "run.completed"' in output


def test_a_crew_runs_in_a_forked_child_with_its_events(socket_path):
    server = start_server("crew", "crews:echo_crew", socket_path)
    try:
        results = [
            run_forked(socket_path, PROJECTS, request({"topic": "bees"})) for _ in range(2)
        ]
    finally:
        server.terminate()
        server.wait(10)

    for result in results:
        assert result.returncode == 0, result.stderr
        assert result.of_type("task.started") == [{"task": "write", "agent": "Writer"}]
        assert result.last["data"]["output"]["raw"] == "one line"


def server_children(server):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{server.pid}/task/{server.pid}/children") as children:
            pids = [int(pid) for pid in children.read().split()]
        if pids:
            return pids
        time.sleep(0.02)
    return []


def only_child(server):
    """The server's one child once the others ended (the spare, between runs)."""
    deadline = time.monotonic() + 10
    while len(children := server_children(server)) != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    [child] = children
    return child


def test_the_child_forked_ahead_takes_the_next_run_and_the_run_after_gets_the_next_one(socket_path, tmp_path):
    server = start_server("graph", "env_graph.py:graph", socket_path)
    try:
        spare = only_child(server)
        result = run_forked(socket_path, tmp_path, request({"sleep": 0.01}))
        assert result.last["type"] == "run.completed"
        assert int((tmp_path / "child.pid").read_text()) == spare

        next_spare = only_child(server)
        assert next_spare != spare
        run_forked(socket_path, tmp_path, request({"sleep": 0.01}))
        assert int((tmp_path / "child.pid").read_text()) == next_spare
    finally:
        server.terminate()
        server.wait(10)


def test_a_run_whose_spare_died_is_forked_as_before(socket_path, tmp_path):
    server = start_server("graph", "env_graph.py:graph", socket_path)
    try:
        spare = only_child(server)
        os.kill(spare, signal.SIGKILL)
        assert wait_gone(spare)

        result = run_forked(socket_path, tmp_path, request({"sleep": 0.01}))

        assert result.last["type"] == "run.completed"
        assert int((tmp_path / "child.pid").read_text()) != spare
    finally:
        server.terminate()
        server.wait(10)


def test_runs_asked_at_once_all_run_spare_or_not(graph_server, tmp_path):
    folders = [tmp_path / str(index) for index in range(3)]
    for folder in folders:
        folder.mkdir()
    connections = [Connection(graph_server, folder, request({"sleep": 0.2})) for folder in folders]

    finals = [connection.finish()[1] for connection in connections]

    assert finals == [{"exit_code": 0}] * 3
    assert len({(folder / "child.pid").read_text() for folder in folders}) == 3


def private_dirty_kb(pid):
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1])
    raise AssertionError("no Private_Dirty in smaps_rollup")


def test_spares_after_a_run_copy_the_pages_that_run_wrote_ahead_of_their_own(socket_path, tmp_path):
    server = start_server("crew", "crews:echo_crew", socket_path)
    try:
        first_spare = only_child(server)
        time.sleep(0.2)
        before = private_dirty_kb(first_spare)
        # The first run reports the pages it wrote; the spare forked while it ran did not know them yet.
        for _ in range(2):
            assert run_forked(socket_path, tmp_path, request({"topic": "bees"})).last["type"] == "run.completed"

        spare = only_child(server)
        time.sleep(0.5)  # it copies them while it waits
        assert private_dirty_kb(spare) > before + 1024
        assert run_forked(socket_path, tmp_path, request({"topic": "bees"})).last["type"] == "run.completed"
    finally:
        server.terminate()
        server.wait(10)
