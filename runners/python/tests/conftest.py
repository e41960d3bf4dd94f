"""Runs the real runner (`python -m crewd_runner`) as crewd does: a child process, one JSON request on stdin."""

import json
import os
import subprocess
import sys
import tempfile
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


def run_runner(kind, target, cwd, request, env=None, timeout=180):
    completed = subprocess.run(
        [sys.executable, "-m", "crewd_runner", f"--{kind}", target],
        input=json.dumps(request),
        cwd=cwd,
        env=runner_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return RunnerResult(completed)


def request(run_input=None, thread=None, command=None, run_id="run_test"):
    return {"run_id": run_id, "input": run_input or {}, "thread": thread, "command": command}


@pytest.fixture
def projects():
    return PROJECTS


@pytest.fixture
def examples():
    return EXAMPLES
