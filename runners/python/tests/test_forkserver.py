"""The fork server: the crew imported once, a forked child per run that behaves as `python -m crewd_runner` does."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import PROJECTS, request, runner_env
from forkserver_support import SECRET, Connection, graph_server, run_forked, socket_path, start_server  # noqa: F401 (fixtures)

HOME_VARIABLES = ("HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "TMPDIR")


@pytest.fixture
def marked_server(socket_path):
    """A server started with a variable of its own, which no run's environment has."""
    server = start_server("graph", "env_graph.py:graph", socket_path, env={"SERVER_ONLY_MARK": "server-only"})
    yield socket_path
    server.terminate()
    server.wait(10)


def test_each_run_is_a_forked_child_with_the_run_environment_folder_and_home(marked_server, tmp_path):
    homes = []
    for run_id in ("run_1", "run_2"):
        # crewd's own home paths for the run, which a server's child cannot see: replaced by the run's own.
        crewd_homes = {name: f"/crewd/runs/{run_id}/{name}" for name in HOME_VARIABLES}
        result = run_forked(marked_server, tmp_path, request(), {"CREWD_RUN_ID": run_id, **crewd_homes})

        assert result.returncode == 0, result.stderr
        output = result.last["data"]["output"]
        assert {key: output[key] for key in ("run_id", "cwd")} == {"run_id": run_id, "cwd": str(tmp_path)}
        # The child's /proc/self/environ shows nothing of the server's variables.
        assert not [entry for entry in output["environ_block"] if "SERVER_ONLY_MARK" in entry]
        run_home = os.path.dirname(output["homes"]["HOME"])
        assert output["homes"] == {
            "HOME": f"{run_home}/home",
            "XDG_DATA_HOME": f"{run_home}/home/.local/share",
            "XDG_CACHE_HOME": f"{run_home}/home/.cache",
            "XDG_CONFIG_HOME": f"{run_home}/home/.config",
            "XDG_STATE_HOME": f"{run_home}/home/.local/state",
            "TMPDIR": f"{run_home}/tmp",
        }
        assert output["tmp"] == f"{run_home}/tmp"
        homes.append(run_home)

    # Each run had a home of its own, in a folder no run can list, removed right after its end was sent.
    assert len(set(homes)) == 2
    assert os.stat(os.path.dirname(homes[0])).st_mode & 0o777 == 0o711
    assert all(wait_until(lambda home=home: not os.path.exists(home)) for home in homes)


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


def test_a_socket_removed_as_soon_as_it_appears_ends_the_server(tmp_path):
    """crewd may retire a server right after it came up; the server must not take a later file for its own."""
    socket_path = tmp_path / "crew.sock"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crewd_runner.forkserver",
            "--graph",
            "env_graph.py:graph",
            "--socket",
            str(socket_path),
        ],
        cwd=PROJECTS,
        env=runner_env(None),
        stdin=subprocess.PIPE,
    )
    try:
        assert server.stdin is not None
        server.stdin.write(f"{SECRET}\n".encode())
        server.stdin.close()
        deadline = time.monotonic() + 120
        while not socket_path.exists():
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.001)
        os.unlink(socket_path)
        assert server.wait(30) == 0
    finally:
        server.kill()


def test_a_server_without_a_run_for_idle_exit_seconds_exits_and_its_socket_and_child_ahead_go_with_it(
    socket_path, tmp_path
):
    server = start_server("graph", "env_graph.py:graph", socket_path, "--idle-exit", "3")
    try:
        assert run_forked(socket_path, tmp_path, request()).last["type"] == "run.completed"
        spare = only_child(server)

        assert server.wait(60) == 0
        assert not socket_path.exists()
        assert wait_gone(spare)
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
        results = [run_forked(socket_path, PROJECTS, request({"topic": "bees"})) for _ in range(2)]
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


def test_the_child_forked_ahead_goes_once_no_run_came_for_spare_seconds_and_comes_back_after_a_run(
    socket_path, tmp_path
):
    # Long enough for the run's child to be reaped before its spare goes: only_child must find the spare.
    server = start_server("graph", "env_graph.py:graph", socket_path, "--spare-seconds", "2")
    try:
        spare = only_child(server)
        assert wait_gone(spare)
        assert server.poll() is None

        result = run_forked(socket_path, tmp_path, request({"sleep": 0.01}))

        assert result.last["type"] == "run.completed"
        next_spare = only_child(server)
        assert next_spare not in (spare, int((tmp_path / "child.pid").read_text()))
        assert wait_gone(next_spare)
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


def waiting_for_its_run(pid):
    """`pid` once it sleeps (a spare, its copy ahead done, waits for its run on its socket)."""

    def asleep():
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "S"

    assert wait_until(lambda: asleep() and not time.sleep(0.1) and asleep(), seconds=60)
    return pid


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores: one run going on, one core free")
def test_a_spare_forked_while_every_core_runs_a_run_copies_nothing_ahead(socket_path, tmp_path):
    # On two cores: a spare forked while one run goes on copies ahead; one forked while two go on does not.
    server = start_server("graph", "env_graph.py:graph", socket_path, cpus=set(sorted(os.sched_getaffinity(0))[:2]))
    connections = []
    try:
        spare = waiting_for_its_run(only_child(server))
        knowing_nothing = private_dirty_kb(spare)
        # The first run reports the pages it wrote; spares forked after it know them.
        assert run_forked(socket_path, tmp_path, request({"sleep": 0.01})).last["type"] == "run.completed"
        copied, running = [], []
        for going_on in (1, 2):
            folder = tmp_path / f"run-{going_on}"
            folder.mkdir()
            connections.append(Connection(socket_path, folder, request({"sleep": 60})))
            running.append(wait_for_pid(folder / "child.pid"))
            spare = next_spare(server, running)
            copied.append(private_dirty_kb(waiting_for_its_run(spare)) - knowing_nothing)
        copied_with_a_core_free, copied_with_none_free = copied

        assert copied_with_a_core_free > 256
        assert copied_with_none_free < copied_with_a_core_free / 4
    finally:
        for connection in connections:
            connection.sock.close()
        server.terminate()
        server.wait(10)


def next_spare(server, running):
    """The server's child that runs none of `running`: the spare it forked once the last of them came."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        others = [pid for pid in server_children(server) if pid not in running]
        if len(others) == 1:
            return others[0]
        time.sleep(0.02)
    raise AssertionError("no spare came")
