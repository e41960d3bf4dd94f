"""Runs the real runner (`python -m crewd_runner`) as crewd does: a child process, one JSON request on stdin."""

import array
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

RUNNER_ROOT = Path(__file__).resolve().parent.parent
REPO_ROOT = RUNNER_ROOT.parent.parent
PROJECTS = Path(__file__).resolve().parent / "projects"
EXAMPLES = REPO_ROOT / "examples"

# Nothing may leave the machine during the tests: CrewAI's telemetry and tracing, OpenTelemetry, LiteLLM's cost map.
OFFLINE_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
    # CrewAI keeps each kickoff's task outputs under the user's data folder: a scratch one, not the home folder.
    "XDG_DATA_HOME": os.path.join(tempfile.gettempdir(), "crewd-runner-tests-data"),
}
# Real model settings would make the examples call a provider instead of their deterministic models.
MODEL_ENV = ("OPENAI_API_KEY", "MODEL", "OPENAI_MODEL")


class RunnerResult:
    def __init__(self, completed):
        self.returncode = completed.returncode
        self.stderr = completed.stderr
        self.events = [parse_protocol_line(line) for line in completed.stdout.splitlines()]

    def of_type(self, event_type):
        return [event["data"] for event in self.events if event["type"] == event_type]

    @property
    def last(self):
        return self.events[-1]

    def logs(self):
        return [data["message"] for data in self.of_type("log")]


def parse_protocol_line(line):
    """Every line the runner writes must be one protocol event: the crew's output can never corrupt it."""
    event = json.loads(line)
    assert isinstance(event, dict) and set(event) == {"type", "data"}, line
    assert isinstance(event["type"], str) and isinstance(event["data"], dict), line
    return event


def runner_env(extra=None):
    env = {key: value for key, value in os.environ.items() if key not in MODEL_ENV}
    env.update(OFFLINE_ENV)
    env["PYTHONPATH"] = str(RUNNER_ROOT)
    env.update(extra or {})
    return env


# Settings CrewAI, LangChain or Python itself may read while importing: a child given others starts afresh.
IMPORT_TIME = ("PYTHON", "TMPDIR", "HOME", "XDG_", "OTEL_", "CREWAI_", "LITELLM_", "LANGCHAIN_", "LANGSMITH_", "HF_")


def run_python(args, cwd, env, input="", timeout=180, fresh=False):
    """`python ARGS` run to its end (as subprocess.run with capture_output and text): a child of the session's zygote
    (tests/zygote.py), which imported CrewAI and LangGraph once, unless `fresh` or `env` differs from the zygote's in
    a setting read at import."""
    if fresh or _differs_at_import(env):
        command = [sys.executable, *args]
        return subprocess.run(command, input=input, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return Zygote.started().run(args, cwd, env, input, timeout)


def _differs_at_import(env):
    base = runner_env()
    keys = {key for key in set(env) | set(base) if env.get(key) != base.get(key)}
    return any(key.startswith(IMPORT_TIME) for key in keys)


class Zygote:
    """The session's tests/zygote.py, started on first use and stopped at the session's end (conftest's fixture)."""

    current = None

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="crewd-zygote-")
        self.socket = os.path.join(self.folder, "z.sock")
        self.log = open(os.path.join(self.folder, "stderr"), "w+b")  # noqa: SIM115 (closed in stop)
        script = Path(__file__).resolve().parent / "zygote.py"
        self.process = subprocess.Popen(
            [sys.executable, str(script), self.socket],
            cwd=self.folder,
            env=runner_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        deadline = time.monotonic() + 180
        while not os.path.exists(self.socket):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise AssertionError(f"the zygote did not start: {self.log.read().decode(errors='replace')}")
            time.sleep(0.05)

    @classmethod
    def started(cls):
        if cls.current is None:
            cls.current = cls()
        return cls.current

    @classmethod
    def stop(cls):
        if cls.current is not None:
            cls.current.process.kill()
            cls.current.process.wait()
            cls.current.log.close()
            shutil.rmtree(cls.current.folder, ignore_errors=True)
            cls.current = None

    def run(self, args, cwd, env, input, timeout):
        with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            stdin.write(input.encode())
            stdin.seek(0)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.connect(self.socket)
                line = json.dumps({"args": args, "cwd": str(cwd), "env": env}).encode() + b"\n"
                fds = array.array("i", [stdin.fileno(), out.fileno(), err.fileno()])
                connection.sendmsg([line], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
                connection.settimeout(timeout)
                answers = connection.makefile("rb")
                pid = int(answers.readline())
                try:
                    code = int(answers.readline())
                except TimeoutError:
                    os.kill(pid, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(args, timeout) from None
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode()
        return subprocess.CompletedProcess([sys.executable, *args], code, stdout, stderr)


def run_runner(kind, target, cwd, request, env=None, timeout=180, fresh=False):
    args = ["-m", "crewd_runner", f"--{kind}", target]
    return RunnerResult(run_python(args, cwd, runner_env(env), json.dumps(request), timeout, fresh))


def request(run_input=None, thread=None, command=None, run_id="run_test"):
    return {"run_id": run_id, "input": run_input or {}, "thread": thread, "command": command}


@pytest.fixture(scope="session", autouse=True)
def zygote_stopped():
    yield
    Zygote.stop()


@pytest.fixture
def projects():
    return PROJECTS


@pytest.fixture
def examples():
    return EXAMPLES
