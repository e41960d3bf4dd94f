"""The worker (RUN_ISOLATION=deployment) as crewd drives it: several runs at a time in one process, each with its own
environment, home, output and cancel; a run that does not stop ends the worker and fails its other runs."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import PROJECTS, runner_env
from forkserver_support import SECRET, Connection


def start_worker(socket_path, *options):
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crewd_runner.worker",
            "--graph",
            "worker_graph.py:graph",
            "--socket",
            str(socket_path),
            *options,
        ],
        cwd=PROJECTS,
        env=runner_env(),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    worker.stdin.write(f"{SECRET}\n".encode())
    worker.stdin.close()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert worker.poll() is None, f"worker exited with {worker.returncode}: {worker.stderr.read()!r}"
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(socket_path))
            return worker
        except OSError:
            time.sleep(0.1)
        finally:
            probe.close()
    raise AssertionError("worker did not start listening")


@pytest.fixture
def worker(tmp_path):
    path = tmp_path / "w.sock"
    process = start_worker(path, "--concurrency", "4")
    yield path, process
    if process.poll() is None:
        process.terminate()
        process.wait(10)


def ask(path, run_id, run_input):
    request = {"run_id": run_id, "input": run_input, "thread": None, "command": None}
    return Connection(path, PROJECTS, request, env={"CREWD_RUN_ID": run_id})


def events_of(output):
    return [json.loads(line) for line in output.splitlines() if line]


def result_of(output):
    return events_of(output)[-1]


def test_concurrent_runs_each_see_their_own_environment_home_and_output(worker, tmp_path):
    path, _ = worker
    gate = tmp_path / "gate"
    runs = [ask(path, f"run_{n}", {"say": f"hello {n}", "wait_for": str(gate)}) for n in range(3)]
    time.sleep(0.5)  # all three wait inside the worker at once
    gate.touch()
    results = [run.finish() for run in runs]
    pids = set()
    homes = set()
    for n, (output, final) in enumerate(results):
        assert final == {"exit_code": 0}
        events = events_of(output)
        result = events[-1]
        assert result["type"] == "run.completed", output
        values = result["data"]["output"]
        assert values["run_id"] == f"run_{n}"
        assert values["expanded"] == values["home"]
        assert values["tmp"].startswith(values["home"].rsplit("/", 1)[0])
        pids.add(values["pid"])
        homes.add(values["home"])
        logs = [event["data"] for event in events if event["type"] == "log"]
        assert {"message": f"says hello {n}", "stream": "stdout"} in logs
        assert {"message": f"warns hello {n}", "stream": "stderr"} in logs
        assert any(log["message"] == f"logs hello {n}" and log.get("logger") == "worker_graph" for log in logs)
        assert not any(f"hello {other}" in json.dumps(logs) for other in range(3) if other != n)
    assert len(pids) == 1  # one process
    assert len(homes) == 3  # a home each


def test_a_canceled_run_ends_alone_and_the_worker_goes_on(worker, tmp_path):
    path, process = worker
    other = ask(path, "run_other", {"wait_for": str(tmp_path / "later")})
    canceled = ask(path, "run_canceled", {"wait_for": str(tmp_path / "never")})
    time.sleep(0.5)
    canceled.signal(signal.SIGTERM)
    output, final = canceled.finish()
    assert final == {"signal": signal.SIGTERM}
    assert not any(event["type"].startswith("run.") for event in events_of(output))
    (tmp_path / "later").touch()
    output, final = other.finish()
    assert final == {"exit_code": 0}
    assert result_of(output)["data"]["output"]["run_id"] == "run_other"
    assert process.poll() is None


def test_a_run_that_does_not_stop_ends_its_worker_and_fails_its_other_runs(worker, tmp_path):
    path, process = worker
    other = ask(path, "run_other", {"wait_for": str(tmp_path / "never")})
    stuck = ask(path, "run_stuck", {"block": 60})
    time.sleep(0.5)
    stuck.signal(signal.SIGTERM)
    time.sleep(0.3)
    stuck.signal(signal.SIGKILL)
    _, final = stuck.finish()
    assert final == {"signal": signal.SIGKILL}
    output, final = other.finish()
    assert final == {"exit_code": 1}
    failed = result_of(output)
    assert failed["type"] == "run.failed"
    assert "run run_stuck of the same version did not stop when canceled" in failed["data"]["error"]
    assert process.wait(10) == 1


def test_a_crash_ends_only_the_workers_runs(worker, tmp_path):
    path, process = worker
    other = ask(path, "run_other", {"wait_for": str(tmp_path / "never")})
    crash = ask(path, "run_crash", {"crash": True})
    assert process.wait(30) != 0
    for run in (crash, other):
        run.sock.settimeout(30)
        received = b""
        while data := run.sock.recv(65536):
            received += data
        assert b"\0" not in received  # no last words: crewd reads a connection that closed without them


def test_runs_beyond_the_concurrency_wait_for_a_free_one(tmp_path):
    path = tmp_path / "w.sock"
    process = start_worker(path, "--concurrency", "1")
    try:
        gate = tmp_path / "gate"
        first = ask(path, "run_first", {"wait_for": str(gate)})
        second = ask(path, "run_second", {})
        second.sock.settimeout(1)
        with pytest.raises(TimeoutError):
            second.sock.recv(1)
        gate.touch()
        assert first.finish()[1] == {"exit_code": 0}
        output, final = second.finish()
        assert final == {"exit_code": 0}
        assert result_of(output)["data"]["output"]["run_id"] == "run_second"
    finally:
        process.terminate()
        process.wait(10)


def test_a_run_canceled_while_it_waits_for_a_place_never_starts(tmp_path):
    path = tmp_path / "w.sock"
    process = start_worker(path, "--concurrency", "1")
    try:
        gate = tmp_path / "gate"
        first = ask(path, "run_first", {"wait_for": str(gate)})
        waiting = ask(path, "run_waiting", {"say": "never"})
        time.sleep(0.5)
        waiting.signal(signal.SIGTERM)
        waiting.signal(signal.SIGKILL)  # what crewd sends after its grace time
        gate.touch()
        output, final = waiting.finish()
        assert final == {"signal": signal.SIGTERM}
        assert output == ""
        assert first.finish()[1] == {"exit_code": 0}
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(10)


def test_crew_runs_one_after_another_in_one_worker_each_with_its_own_events(tmp_path):
    path = tmp_path / "w.sock"
    worker = subprocess.Popen(
        [sys.executable, "-m", "crewd_runner.worker", "--crew", "crews:echo_crew", "--socket", str(path)],
        cwd=PROJECTS,
        env=runner_env(),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    worker.stdin.write(f"{SECRET}\n".encode())
    worker.stdin.close()
    try:
        deadline = time.monotonic() + 180
        while not path.exists():
            assert worker.poll() is None, worker.stderr.read()
            assert time.monotonic() < deadline, "the worker did not listen"
            time.sleep(0.1)
        # Asked at once: a crew runs one at a time whatever the concurrency, so the second waits for the first.
        runs = [ask(path, f"run_{n}", {"topic": "bees"}) for n in range(2)]
        for run in runs:
            output, final = run.finish()
            assert final == {"exit_code": 0}
            events = events_of(output)
            assert [event["data"] for event in events if event["type"] == "task.started"] == [
                {"task": "write", "agent": "Writer"}
            ]
            assert events[-1]["type"] == "run.completed"
            assert events[-1]["data"]["output"]["raw"] == "one line"
            assert any(event["data"].get("message") == "the crew's own listener saw write" for event in events)
    finally:
        worker.terminate()
        worker.wait(10)


# The worker's CPU limit in the next test: it retires at half of it, CPU_LIMIT / 2 seconds. Its imports take about 2 s.
CPU_LIMIT = 12


def cpu_seconds(pid):
    """The process's user and system time so far (/proc/PID/stat, in clock ticks)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_worker_that_used_half_its_cpu_limit_takes_no_more_runs_and_exits(tmp_path):
    path = tmp_path / "w.sock"

    def cpu_limit():
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, 30))

    worker = subprocess.Popen(
        [sys.executable, "-m", "crewd_runner.worker", "--graph", "worker_graph.py:graph", "--socket", str(path)],
        cwd=PROJECTS,
        env=runner_env(),
        stdin=subprocess.PIPE,
        preexec_fn=cpu_limit,
    )
    worker.stdin.write(f"{SECRET}\n".encode())
    worker.stdin.close()
    try:
        deadline = time.monotonic() + 120
        while not path.exists():
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        # The import took some of the half; the run takes the rest and a second more.
        used = cpu_seconds(worker.pid)
        assert used < CPU_LIMIT / 2, f"the worker's start alone took {used} s of CPU"
        output, final = ask(path, "run_burning", {"burn": CPU_LIMIT / 2 - used + 1}).finish()
        assert final == {"exit_code": 0}
        assert result_of(output)["type"] == "run.completed"
        assert worker.wait(30) == 0
        assert not path.exists()
    finally:
        if worker.poll() is None:
            worker.kill()
