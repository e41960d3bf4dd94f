"""What fork servers of one environment would hold if they shared the framework's pages (docs/ARCHITECTURE.md, "Memory
per deployment: environment servers"): the proportional set size (PSS) of N fork servers of the echo graph and their
children ahead, (a) each server a process of its own that imports LangGraph, as crewd starts them today, against
(b) each server forked from one environment process that imported LangGraph and crewd_runner, froze them
(`gc.freeze()`) and does nothing else, as an environment server would. Each server runs one run, so each keeps a child
ahead as a version that ran recently does. (c) is (b) with the version server looking for kept home paths
(run_home.kept_paths) only in the modules it imported itself: walking every module's namespace, as a server does once
after its imports, writes to the reference count of every value in them, so a server forked from the environment
copies most of the environment's pages. Without a sandbox: the figures are the Python processes' alone.

Run with the test environment: `$(runners/python/scripts/test-env.sh) runners/python/scripts/bench_shared_framework.py`
(BENCH_VERSIONS, default 20). Prints `figure: <name> = <value> MB` lines, and each figure's split between servers and
children ahead.
"""

import gc
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNNER_ROOT = Path(__file__).resolve().parent.parent
PROJECTS = RUNNER_ROOT / "tests" / "projects"
sys.path[:0] = [str(RUNNER_ROOT), str(RUNNER_ROOT / "tests"), str(PROJECTS)]

from conftest import runner_env  # noqa: E402

VERSIONS = int(os.environ.get("BENCH_VERSIONS", "20"))
SECRET = os.urandom(32).hex()
ENTRY = ["--graph", "echo_graph.py:graph"]


def wait_listening(path: str) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            return  # a connection without a request is refused: the server listens
        except OSError:
            time.sleep(0.1)
        finally:
            probe.close()
    raise SystemExit(f"no server listened on {path}")


def run_once(path: str) -> None:
    """One run of the echo graph, asked as crewd asks (forkserver's protocol)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    stdin = json.dumps({"run_id": "run_bench", "input": {"text": "hi"}, "thread": None, "command": None})
    header = {"secret": SECRET, "env": runner_env(), "cwd": str(PROJECTS), "stdin": stdin}
    connection.sendall(json.dumps(header).encode() + b"\n")
    received = b""
    while data := connection.recv(65536):
        received += data
    connection.close()
    if b'"run.completed"' not in received:
        raise SystemExit(f"the run did not complete: {received[-500:]!r}")


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as listed:
            found += [int(child) for child in listed.read().split()]
    return found


def pss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure(servers: list[int], environment: int | None) -> dict[str, float]:
    """PSS in MB of the servers, their children ahead and the environment process, once the runs' children ended."""
    time.sleep(3)
    spares = [child for server in servers for child in children(server)]
    return {
        "servers": sum(map(pss_mb, servers)),
        "children ahead": sum(map(pss_mb, spares)),
        "environment process": pss_mb(environment) if environment else 0.0,
    }


def independent(folder: str) -> dict[str, float]:
    servers = []
    for n in range(VERSIONS):
        path = f"{folder}/{n}"
        command = [sys.executable, "-m", "crewd_runner.forkserver", *ENTRY, "--socket", path]
        server = subprocess.Popen(command, cwd=PROJECTS, env=runner_env(), stdin=subprocess.PIPE)
        assert server.stdin is not None
        server.stdin.write(f"{SECRET}\n".encode())
        server.stdin.close()
        servers.append(server)
        wait_listening(path)
    for n in range(VERSIONS):
        run_once(f"{folder}/{n}")
    try:
        return measure([server.pid for server in servers], None)
    finally:
        for server in servers:
            server.terminate()
            server.wait(30)


def forked(folder: str, walk: str) -> dict[str, float]:
    # The environment process is this script too: it gets the servers' secret on its standard input, as servers do.
    command = [sys.executable, __file__, "--environment", folder, walk]
    environment = subprocess.Popen(command, cwd=PROJECTS, env=runner_env(), stdin=subprocess.PIPE)
    assert environment.stdin is not None
    environment.stdin.write(f"{SECRET}\n".encode())
    environment.stdin.close()
    for n in range(VERSIONS):
        wait_listening(f"{folder}/{n}")
    for n in range(VERSIONS):
        run_once(f"{folder}/{n}")
    try:
        return measure(children(environment.pid), environment.pid)
    finally:
        for n in range(VERSIONS):
            os.unlink(f"{folder}/{n}")  # each server drains once its socket is gone; the environment process follows
        environment.wait(60)


def environment_process(folder: str, walk: str) -> None:
    """The environment server's part: the framework and the runner imported and frozen, then a fork per version."""
    secret = sys.stdin.readline()
    import langgraph.graph  # noqa: F401

    from crewd_runner import forkserver, langgraph_adapter, run_home

    langgraph_adapter.warm_up()
    gc.freeze()
    framework = frozenset(sys.modules)

    def kept_paths_of_own_modules(prefix: str) -> run_home.KeptPaths:
        """run_home.kept_paths over the modules imported after the fork: only their names are read of the others."""
        found: run_home.KeptPaths = []
        for name in [name for name in sys.modules if name not in framework]:
            namespace = getattr(sys.modules[name], "__dict__", None)
            if isinstance(namespace, dict):
                found.extend(
                    (namespace, key) for key, value in list(namespace.items()) if run_home._under(value, prefix)
                )
        return found

    for n in range(VERSIONS):
        if os.fork() == 0:
            sys.stdin = io.StringIO(secret)
            if walk == "own":
                run_home.kept_paths = kept_paths_of_own_modules
            os._exit(forkserver.main([*ENTRY, "--socket", f"{folder}/{n}"]))
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def report(name: str, parts: dict[str, float]) -> None:
    total = sum(parts.values())
    split = ", ".join(f"{part} {mb / VERSIONS:.1f}" for part, mb in parts.items() if mb)
    print(f"figure: {name} = {total / VERSIONS:.1f} MB ({split} per version; {VERSIONS} versions)", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--environment"]:
        environment_process(sys.argv[2], sys.argv[3])
        return
    with tempfile.TemporaryDirectory(prefix="crewd-bench-shared-") as folder:
        report("fork_servers_each_importing_pss_per_version", independent(folder))
        report("fork_servers_forked_from_an_environment_pss_per_version", forked(folder, "all"))
        report("fork_servers_forked_walking_their_own_modules_pss_per_version", forked(folder, "own"))


if __name__ == "__main__":
    main()
