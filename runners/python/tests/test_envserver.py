"""The environment server (crewd_runner.envserver): versions of one environment share its process and its imports,
each version server sees only its own files and processes, and the environment server never holds a version's
variables."""

import shutil
import sys
import time

import pytest
from envserver_support import Environment, descendants, memory_holds, run_in_version

from forkserver_support import SECRET

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the environment server runs in bwrap")

# A graph that says what its run sees: the portal, another version's file, the processes in /proc, a variable.
LOOKING_GRAPH = """
import os
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    other: str
    seen: dict


def look(state):
    here = os.getcwd()
    portal = os.path.dirname(here)
    try:
        with open(state["other"]) as file:
            other = file.read()
    except OSError as error:
        other = type(error).__name__
    try:
        sockets = sorted(os.listdir(os.path.join(os.path.dirname(portal), "s")))
    except OSError as error:
        sockets = [type(error).__name__]
    processes = sorted(name for name in os.listdir("/proc") if name.isdigit())
    try:
        with open("/proc/self/status") as file:
            status = dict(line.split(":\t", 1) for line in file.read().splitlines() if ":\t" in line)
    except OSError as error:
        status = {"error": type(error).__name__}
    return {"seen": {"portal": sorted(os.listdir(portal)), "other": other, "sockets": sockets,
                     "processes": processes, "variable": os.environ.get("VERSION_VARIABLE"), "pid": os.getpid(),
                     "parent": os.getppid(), "status": status}}


builder = StateGraph(State)
builder.add_node("look", look)
builder.add_edge(START, "look")
builder.add_edge("look", END)
graph = builder.compile()
"""
ENTRY = ["--graph", "look.py:graph"]


# A graph whose run writes text into an integer kernel setting: refused (EROFS, EACCES) where it cannot write it,
# EINVAL where it could; directly, and through a fresh /proc of user, mount and PID namespaces of its own (the kernel
# makes that one writable where a writable proc mount is in the mount table).
SETTINGS_GRAPH = """
import ctypes
import errno
import os
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    seen: dict


def write_setting():
    try:
        with open("/proc/sys/kernel/printk_ratelimit", "w") as file:
            file.write("text")
        return "written"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


def in_fresh_namespaces():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000 | 0x00020000 | 0x20000000) != 0:
        return 0
    pid = os.fork()
    if pid == 0:
        libc.mount(b"none", b"/", None, (1 << 14) | (1 << 18), None)
        for flags in (2 | 4 | 8, 1 | 2 | 4 | 8):
            if libc.mount(b"proc", b"/proc", b"proc", flags, None) == 0:
                os._exit(3 if write_setting() in ("written", "EINVAL") else 2)
        os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def look(state):
    seen = {"direct": write_setting()}
    child = os.fork()
    if child == 0:
        os._exit(in_fresh_namespaces())
    outcomes = ["no namespaces", "no proc", "refused", "writable"]
    seen["nested"] = outcomes[os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])]
    return {"seen": seen}


builder = StateGraph(State)
builder.add_node("look", look)
builder.add_edge(START, "look")
builder.add_edge("look", END)
graph = builder.compile()
"""


@pytest.fixture
def environment():
    environment = Environment("graph", "--idle-exit", "120")
    yield environment
    environment.stop()


def seen(events):
    ended = [event for event in events if event.get("type") == "run.completed"]
    assert ended, events
    return ended[-1]["data"]["output"]["seen"]


def test_two_versions_are_served_by_one_environment_server(environment):
    first = environment.add_version("a", {"look.py": LOOKING_GRAPH, "mine.txt": "version a"})
    second = environment.add_version("b", {"look.py": LOOKING_GRAPH, "mine.txt": "version b"})
    sockets = [environment.ask(first, ENTRY), environment.ask(second, ENTRY)]
    assert all(not isinstance(path, str) for path in sockets), sockets
    for path, folder, other in ((sockets[0], first, second), (sockets[1], second, first)):
        events, final = run_in_version(path, folder, {"other": str(other / "mine.txt")}, {"VERSION_VARIABLE": "x"})
        assert final == {"exit_code": 0}
        view = seen(events)
        # Its own files only, no other version's socket folder, only its own processes.
        assert view["portal"] == [folder.name]
        assert view["other"] in ("FileNotFoundError", "PermissionError")
        assert view["sockets"] == [path.parent.name]
        assert view["variable"] == "x"
        assert all(int(pid) < 10 for pid in view["processes"])
        assert view["pid"] < 10  # a PID namespace of its own
        # And a /proc of it, as root too: its own status (one pid: not a parent namespace's /proc), and its processes.
        assert (view["status"].get("Pid"), view["status"].get("NSpid")) == (str(view["pid"]),) * 2, view["status"]
        assert {"1", str(view["parent"]), str(view["pid"])} <= set(view["processes"])
    # One sandbox: every version server is a process under the one environment server.
    assert len(descendants(environment.process.pid)) >= 2 + 2 * 2


def test_a_versions_runs_cannot_write_the_kernels_settings(environment):
    folder = environment.add_version("a", {"look.py": SETTINGS_GRAPH})
    path = environment.ask(folder, ENTRY)
    assert not isinstance(path, str), path
    events, final = run_in_version(path, folder, {})
    assert final == {"exit_code": 0}
    view = seen(events)
    # As root the version's /proc is read-only (EROFS); as another user the setting is root's (EACCES).
    assert view["direct"] in ("EROFS", "EACCES"), view
    assert view["nested"] in ("no namespaces", "no proc", "refused"), view


def test_the_environment_server_never_holds_a_versions_variables(environment):
    folder = environment.add_version("a", {"look.py": LOOKING_GRAPH})
    marker = "secret-of-the-deployment-" + "5" * 24
    path = environment.ask(folder, ENTRY, {"VERSION_VARIABLE": marker})
    assert not isinstance(path, str), path
    events, _ = run_in_version(path, folder, {"other": "/nothing"}, {"VERSION_VARIABLE": marker})
    assert seen(events)["variable"] == marker
    # The sandbox's processes: bwrap, its init, setpriv's program (the environment server) and below it.
    tree = descendants(environment.process.pid)
    holders = [pid for pid in tree if memory_holds(pid, marker.encode())]
    server = next(pid for pid in tree if _is_environment_server(pid))  # breadth first: the first is the server
    assert holders, "the version server holds the variables it was given"
    assert server not in holders


def test_a_request_without_the_secret_is_refused(environment):
    folder = environment.add_version("a", {"look.py": LOOKING_GRAPH})
    answer = environment.ask(folder, ENTRY, secret="00" * 32)
    assert answer == ""
    assert environment.ask(folder, ENTRY, secret=SECRET) != ""


def test_a_version_server_keeps_a_child_ahead_only_while_its_version_ran_recently():
    environment = Environment("graph", "--idle-exit", "120", "--spare-seconds", "0.5")
    try:
        folder = environment.add_version("a", {"look.py": LOOKING_GRAPH})
        path = environment.ask(folder, ENTRY)
        assert not isinstance(path, str), path
        run_in_version(path, folder, {"other": "/nothing"})
        # bwrap's init, the environment server, and the version's: the one left in the environment's PID
        # namespace, the first of its own, its server and, while its version ran recently, the child forked ahead.
        deadline = time.monotonic() + 60
        while len(descendants(environment.process.pid)) > 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(descendants(environment.process.pid)) == 5
        _events, final = run_in_version(path, folder, {"other": "/nothing"})
        assert final == {"exit_code": 0}
    finally:
        environment.stop()


ONE_TASK_CREW = """
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM


class AnswerLLM(BaseLLM):
    def call(self, messages, *args, **kwargs):
        return "Thought: I now know the final answer\\nFinal Answer: one line"


def crew():
    writer = Agent(role="Writer", goal="Write about {topic}", backstory="Brief.", llm=AnswerLLM(model="answer"))
    task = Task(name="write", description="Write about {topic}", expected_output="One line", agent=writer)
    return Crew(agents=[writer], tasks=[task])
"""
# CrewAI's telemetry as it is by default, sent (should it be sent) to a closed local port, never off the machine.
CREWAI_TELEMETRY_ON = {
    "CREWAI_DISABLE_TELEMETRY": None,
    "CREWAI_DISABLE_TRACKING": None,
    "CREWAI_TRACING_ENABLED": None,
    "OTEL_SDK_DISABLED": None,
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
}


def test_a_crewai_version_server_starts_where_crewai_telemetry_is_on():
    """An environment server never gets a deployment's variables, so CrewAI's telemetry is on in it unless the
    machine turns it off. Its version servers then failed to start (unshare: EINVAL: a child forked after CrewAI was
    imported with telemetry on has the exporter's thread too), and every run of a CrewAI version ran cold."""
    environment = Environment("crew", "--idle-exit", "120", settings=CREWAI_TELEMETRY_ON)
    try:
        folder = environment.add_version("a", {"one_crew.py": ONE_TASK_CREW})
        path = environment.ask(folder, ["--crew", "one_crew:crew"])
        assert not isinstance(path, str), path
        events, final = run_in_version(path, folder, {"topic": "bees"})
        assert final == {"exit_code": 0}
        [completed] = [event for event in events if event.get("type") == "run.completed"]
        assert completed["data"]["output"]["raw"] == "one line"
    finally:
        environment.stop()


def _is_environment_server(pid):
    """The environment server is the first python of the tree (bwrap's argv names the module too)."""
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        words = cmdline.read().split(b"\0")
    return words[:3] == [sys.executable.encode(), b"-m", b"crewd_runner.envserver"]


def test_pid_max_is_written_only_where_the_kernel_keeps_it_per_pid_namespace():
    from crewd_runner.versionview import pid_max_per_namespace

    assert [pid_max_per_namespace(release) for release in ("6.14.0", "6.18.44-fc", "7.0")] == [True] * 3
    assert [pid_max_per_namespace(release) for release in ("6.13.9", "5.15.0-105-generic", "odd")] == [False] * 3
