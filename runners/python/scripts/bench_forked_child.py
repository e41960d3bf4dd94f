"""The CPU of a forked child's run, with and without the fork server's LangGraph rehearsal (issue 35).

Fork servers of the same graph (`crewd_runner.forkserver`, no crewd, no sandbox), one that does not rehearse
(before_import.rehearse turned off in it) and ones that do, take runs in turns from one client. Each child measures
itself, inside, with `time.process_time` and its minor faults: around its copy ahead (`hot_pages.populate`, while it
waits) and around its run (`cli.run_over_protocol`: the request, the graph's run, the result line), and counts the
modules its run imported; each server, its CPU until it imported the version (its rehearsal included).

Run with the test environment, from the repository:
`$(runners/python/scripts/test-env.sh) runners/python/scripts/bench_forked_child.py [--runs 200] [--graph FILE:ATTR]
[--api] [--rounds 0,3]`. `--rounds`: a server per number of rehearsal rounds (0: none, as before the rehearsal),
taking runs in turns; `--api`: runs of crewd's LangGraph API in a thread, stream mode `values`, as
`/langgraph/runs/wait` sends them (otherwise crewd's own). Prints medians (and means) per server, and the load average
before and after.
"""

import argparse
import json
import os
import resource
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNNER_ROOT = Path(__file__).resolve().parent.parent
PROJECTS = RUNNER_ROOT / "tests" / "projects"
INPUTS = {
    "echo_graph.py:graph": {"text": "hello"},
    "token_graph.py:graph": {"messages": [{"role": "user", "content": "hi"}], "tokens": 3},
}
SECRET = secrets.token_hex(32)


def serve(argv: list[str]) -> int:
    """The fork server, measured: `serve OUT ROUNDS FORKSERVER_ARGS...` (a process of its own; ROUNDS 0: no
    rehearsal)."""
    from crewd_runner import before_import, cli, forkserver, hot_pages, langgraph_rehearsal

    out, rounds, rest = argv[0], int(argv[1]), argv[2:]
    langgraph_rehearsal.ROUNDS = rounds
    if rounds == 0:
        before_import.rehearse = lambda args: False
    preload = forkserver.preload

    def measured_preload(*args: Any, **kwargs: Any) -> Any:
        loaded = preload(*args, **kwargs)
        # Since the process started: the interpreter, the imports, the rehearsal, the version's import.
        _write(out, {"preload_cpu_ms": time.process_time() * 1000})
        return loaded

    forkserver.preload = measured_preload
    copy_ahead: dict[str, float] = {}
    populate, run_over_protocol = hot_pages.populate, cli.run_over_protocol

    def measured_populate(*args: object, **kwargs: object) -> object:
        cpu, faults = time.process_time(), _faults()
        try:
            return populate(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            copy_ahead.update(cpu_ms=(time.process_time() - cpu) * 1000, faults=_faults() - faults)

    def measured_run(*args: object, **kwargs: object) -> int:
        before = set(sys.modules)
        cpu, faults = time.process_time(), _faults()
        code = run_over_protocol(*args, **kwargs)  # type: ignore[arg-type]
        record = {
            "run_cpu_ms": (time.process_time() - cpu) * 1000,
            "run_faults": _faults() - faults,
            "imported": len(set(sys.modules) - before),
            "ahead_cpu_ms": copy_ahead.get("cpu_ms"),
            "ahead_faults": copy_ahead.get("faults"),
        }
        _write(out, record)
        return code

    hot_pages.populate = measured_populate
    cli.run_over_protocol = measured_run
    return forkserver.main(rest)


def _write(out: str, record: dict[str, object]) -> None:
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, (json.dumps(record) + "\n").encode())
    os.close(fd)


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class Server:
    def __init__(self, folder: str, graph: str, rounds: int) -> None:
        name = f"rounds-{rounds}"
        self.name = "without rehearsal" if rounds == 0 else f"rehearsal of {rounds} rounds"
        self.out = os.path.join(folder, f"{name}.jsonl")
        self.socket = os.path.join(folder, f"{name}.sock")
        sys.path[:0] = [str(RUNNER_ROOT / "tests")]
        from conftest import runner_env

        self.env = runner_env()
        command = [sys.executable, __file__, "serve", self.out, str(rounds)]
        command += ["--graph", graph, "--socket", self.socket]
        self.process = subprocess.Popen(command, cwd=PROJECTS, env=self.env, stdin=subprocess.PIPE)
        assert self.process.stdin is not None
        self.process.stdin.write(f"{SECRET}\n".encode())
        self.process.stdin.close()
        while not os.path.exists(self.socket):
            if self.process.poll() is not None:
                raise RuntimeError(f"{name}: the fork server exited with {self.process.returncode}")
            time.sleep(0.05)

    def run(self, request: dict[str, object]) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.socket)
        header = {"secret": SECRET, "env": self.env, "cwd": str(PROJECTS), "stdin": json.dumps(request)}
        sock.sendall(json.dumps(header).encode() + b"\n")
        received = b""
        while data := sock.recv(65536):
            received += data
        sock.close()
        output = received.partition(b"\0")[0].decode()
        if '"run.completed"' not in output.splitlines()[-1]:
            raise RuntimeError(f"{self.name}: the run did not complete: {received[-500:]!r}")

    def stop(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(the server's start, its children's runs but the first)."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)
        with open(self.out) as lines:
            start, *runs = [json.loads(line) for line in lines]
        return start, runs[1:]


def load_average() -> str:
    with open("/proc/loadavg") as load:
        return load.read().strip()


def summary(records: list[dict[str, Any]], key: str) -> str:
    values = [record[key] for record in records if record.get(key) is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} (mean {statistics.mean(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--graph", default="echo_graph.py:graph", choices=sorted(INPUTS))
    parser.add_argument("--api", action="store_true", help="runs of crewd's LangGraph API in a thread")
    parser.add_argument("--rounds", default="0,3", help="a server per number of rehearsal rounds (0: none; 3: ROUNDS)")
    args = parser.parse_args()
    run_input: dict[str, object] = dict(INPUTS[args.graph])
    thread = None
    if args.api:
        run_input["__langgraph__"] = {"stream_mode": ["values"]}
        thread = {"thread_id": "bench"}
    request = {"run_id": "run_bench", "input": run_input, "thread": thread, "command": None}
    print(f"load average before: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        servers = [Server(folder, args.graph, int(rounds)) for rounds in args.rounds.split(",")]
        try:
            for server in servers:
                server.run(request)  # the first child after start-up is not the steady state
            for _ in range(args.runs):
                for server in servers:
                    server.run(request)
        finally:
            results = {server.name: server.stop() for server in servers}
    print(f"load average after: {load_average()}")
    print(f"{args.graph}, {'LangGraph API in a thread' if args.api else 'crewd API'}, {args.runs} runs each")
    for name, (start, records) in results.items():
        print(
            f"{name}: server {start['preload_cpu_ms']:.0f} ms of CPU until loaded; per child (median, mean): "
            f"run {summary(records, 'run_cpu_ms')} ms, faults in run {summary(records, 'run_faults')}, "
            f"copy ahead {summary(records, 'ahead_cpu_ms')} ms ({summary(records, 'ahead_faults')} faults), "
            f"modules imported by the run {summary(records, 'imported')}"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        sys.exit(serve(sys.argv[2:]))
    main()
