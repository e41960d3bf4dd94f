"""What a Python run costs to start, at the runner level: a process per run (`python -m crewd_runner`) against the
fork server (a run asked of a warm `crewd_runner.forkserver` on its socket, as crewd asks), against a warm in-process
call.

Run with the test environment: `$(runners/python/scripts/test-env.sh) runners/python/scripts/bench_startup.py`.
Prints `figure: <name> = <value> <unit> (goal …)` lines. The issue's goals are measured through the API
(POST → complete); these are the runner's share of them.
"""

import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

RUNNER_ROOT = Path(__file__).resolve().parent.parent
PROJECTS = RUNNER_ROOT / "tests" / "projects"
sys.path[:0] = [str(RUNNER_ROOT / "tests"), str(PROJECTS)]

from conftest import runner_env  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "9"))
GRAPH = ("graph", "echo_graph.py:graph", {"text": "hello"})
CREW = ("crew", "crews:echo_crew", {"topic": "bees"})


def median_ms(action: Callable[[], object], runs: int = RUNS) -> float:
    times: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run_process(argv: list[str], run_input: dict[str, str]) -> None:
    request = json.dumps({"run_id": "run_bench", "input": run_input, "thread": None, "command": None})
    done = subprocess.run(argv, input=request, cwd=PROJECTS, env=runner_env(), capture_output=True, text=True)
    if '"run.completed"' not in done.stdout.splitlines()[-1]:
        raise RuntimeError(f"run did not complete: {done.stdout[-500:]} {done.stderr[-500:]}")


# What the server gets on its standard input and each request carries, as crewd does.
SECRET = secrets.token_hex(32)


def run_forked(socket_path: str, run_input: dict[str, str]) -> None:
    request = json.dumps({"run_id": "run_bench", "input": run_input, "thread": None, "command": None})
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    header = {"secret": SECRET, "env": runner_env(), "cwd": str(PROJECTS), "stdin": request}
    sock.sendall(json.dumps(header).encode() + b"\n")
    received = b""
    while data := sock.recv(65536):
        received += data
    sock.close()
    output = received.partition(b"\0")[0].decode()
    if '"run.completed"' not in output.splitlines()[-1]:
        raise RuntimeError(f"run did not complete: {received[-500:]}")


def cold_ms(kind: str, target: str, run_input: dict[str, str]) -> float:
    argv = [sys.executable, "-m", "crewd_runner", f"--{kind}", target]
    return median_ms(lambda: run_process(argv, run_input))


def forked_ms(kind: str, target: str, run_input: dict[str, str]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        socket_path = os.path.join(folder, "bench.sock")
        server = subprocess.Popen(
            [sys.executable, "-m", "crewd_runner.forkserver", f"--{kind}", target, "--socket", socket_path],
            cwd=PROJECTS,
            env=runner_env(),
            stdin=subprocess.PIPE,
        )
        assert server.stdin is not None
        server.stdin.write(f"{SECRET}\n".encode())
        server.stdin.close()
        try:
            while not os.path.exists(socket_path):
                time.sleep(0.05)
            run_forked(socket_path, run_input)  # the first child after start-up is not the steady state
            return median_ms(lambda: run_forked(socket_path, run_input))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(10)


def warm_graph_ms() -> float:
    from echo_graph import graph

    graph.invoke(GRAPH[2])
    return median_ms(lambda: graph.invoke(GRAPH[2]), runs=RUNS * 5)


def warm_kickoff_ms() -> float:
    os.environ.update(runner_env())
    from crews import echo_crew

    echo_crew().kickoff(inputs=CREW[2])
    return median_ms(lambda: echo_crew().kickoff(inputs=CREW[2]))


def figure(name: str, value: float, unit: str, goal: tuple[str, float] | None = None) -> None:
    line = f"figure: {name} = {value:.2f} {unit}"
    if goal:
        op, target = goal
        met = value <= target if op == "<=" else value >= target
        line += f" (goal {op} {target}: {'met' if met else 'missed'})"
    print(line, flush=True)


def main() -> None:
    graph_cold = cold_ms(*GRAPH)
    graph_forked = forked_ms(*GRAPH)
    figure("python one-node graph, process per run (runner only)", graph_cold, "ms", ("<=", 150))
    figure("python one-node graph, fork server run (runner only)", graph_forked, "ms", ("<=", 150))
    figure("python one-node graph, warm invoke in process", warm_graph_ms(), "ms")
    crew_cold = cold_ms(*CREW)
    crew_forked = forked_ms(*CREW)
    kickoff = warm_kickoff_ms()
    figure("crewai one-agent crew, warm kickoff in process", kickoff, "ms")
    figure("crewai one-agent crew, process per run ÷ warm kickoff (runner only)", crew_cold / kickoff, "x", ("<=", 1.5))
    figure(
        "crewai one-agent crew, fork server run ÷ warm kickoff (runner only)", crew_forked / kickoff, "x", ("<=", 1.5)
    )


if __name__ == "__main__":
    main()
