"""The fork server's LangGraph rehearsal: runs of a built-in graph before the version's graph is imported, so that a
forked child's run finds a first run's work done, leaving nothing behind that a run could see."""

import json

import pytest
from envserver_support import Environment, run_in_version

from conftest import PROJECTS, request, run_python, runner_env
from forkserver_support import run_forked, start_server

PROBE = "import_probe_graph.py:graph"
MESSAGES = {"messages": [{"role": "user", "content": "hi"}]}
# A run of crewd's LangGraph API in a thread (its stream request rides in the input, as crewd puts it there).
API_INPUT = {**MESSAGES, "__langgraph__": {"stream_mode": ["values"]}}


def imported(events):
    [found] = [event["data"]["modules"] for event in events if event["type"] == "test.imported"]
    return found


def test_a_forked_childs_run_imports_nothing_its_server_had_not_imported(tmp_path):
    socket_path = tmp_path / "crew.sock"
    server = start_server("graph", PROBE, socket_path)
    try:
        runs = [
            run_forked(socket_path, PROJECTS, request(MESSAGES)),
            run_forked(socket_path, PROJECTS, request(API_INPUT, thread={"thread_id": "t1"})),
        ]
    finally:
        server.terminate()
        server.wait(10)

    for result in runs:
        assert result.returncode == 0, result.stderr
        assert result.last["type"] == "run.completed", result.events
        # Without the rehearsal the first model call of each child imported LangChain's block translators.
        assert imported(result.events) == []


def test_a_version_server_inherits_its_environment_servers_rehearsal():
    environment = Environment("graph", "--idle-exit", "120")
    try:
        folder = environment.add_version("a", {"probe.py": (PROJECTS / "import_probe_graph.py").read_text()})
        path = environment.ask(folder, ["--graph", "probe.py:graph"])
        assert not isinstance(path, str), path
        events, final = run_in_version(path, folder, MESSAGES)
    finally:
        environment.stop()

    assert final == {"exit_code": 0}
    assert events[-1]["type"] == "run.completed", events
    assert imported(events) == []


AFTER_REHEARSAL = """
import json, os, sys, tempfile, threading, warnings
from langsmith import run_helpers, utils
from crewd_runner import langgraph_rehearsal, store_channel
from crewd_runner.langgraph_adapter import run_graph
from crewd_runner.protocol import Emitter
import echo_graph

os.environ["LANGSMITH_TRACING"] = "true"
utils.get_env_var.cache_clear()
environment, filters, tracing = dict(os.environ), list(warnings.filters), run_helpers.get_tracing_context()
done = langgraph_rehearsal.rehearse()
after = {
    "rehearsed": done,
    "threads": threading.active_count(),
    "environment_kept": dict(os.environ) == environment,
    "filters_kept": warnings.filters == filters,
    "tracing_context_kept": run_helpers.get_tracing_context() == tracing,
    # No setting of LangSmith's was read and cached: a run whose variables turn tracing on traces.
    "settings_cached": utils.get_env_var.cache_info().currsize,
    "store_channel": store_channel.current.get(),
    "left_in_tmp": os.listdir(tempfile.gettempdir()),
}
# A run in the rehearsal's own thread starts from nothing: its checkpointer and store are its own.
os.environ.pop("LANGSMITH_TRACING")
thread = {"thread_id": langgraph_rehearsal.THREAD_ID}
request = {"run_id": "r", "input": {"text": "mine"}, "thread": thread, "command": None}
outcome = run_graph(echo_graph.graph, request, Emitter(os.open(os.devnull, os.O_WRONLY)))
after["values"] = outcome.data["values"]
after["checkpoints"] = len(outcome.data["checkpoint"]["checkpoints"])
print(json.dumps(after))
"""


def test_the_rehearsal_leaves_no_thread_output_setting_or_state_behind(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # LangSmith's endpoint is a closed port: were anything traced, its sender's thread would be left running.
    env = runner_env({"TMPDIR": str(tmp), "LANGSMITH_ENDPOINT": "http://127.0.0.1:9", "LANGSMITH_API_KEY": "none"})

    completed = run_python(["-c", AFTER_REHEARSAL], PROJECTS, env, fresh=True)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    # Its output went nowhere: the script's one line is all that reached standard output.
    [line] = completed.stdout.splitlines()
    assert json.loads(line) == {
        "rehearsed": True,
        "threads": 1,
        "environment_kept": True,
        "filters_kept": True,
        "tracing_context_kept": True,
        "settings_cached": 0,
        "store_channel": None,
        "left_in_tmp": [],
        "values": {"text": "mine", "echo": "mine"},
        "checkpoints": 1,
    }


LACKING = """
import logging
from crewd_runner import langgraph_rehearsal
logging.basicConfig(format="%(message)s")
def lacking():
    raise ImportError("no add_messages in this LangGraph")
langgraph_rehearsal.built_in_graph = lacking
print(langgraph_rehearsal.rehearse())
"""

REFUSING = """
import logging
from langgraph.graph import StateGraph
from crewd_runner import langgraph_rehearsal
logging.basicConfig(format="%(message)s")
def refuse(*args, **kwargs):
    raise TypeError("unexpected argument")
StateGraph.add_conditional_edges = refuse
print(langgraph_rehearsal.rehearse())
"""

FAILING = """
import logging
from crewd_runner import langgraph_rehearsal
logging.basicConfig(format="%(message)s")
def broken(graph, request, emitter):
    raise RuntimeError("a part of LangGraph failed")
langgraph_rehearsal.run_graph = broken
print(langgraph_rehearsal.rehearse())
"""


@pytest.mark.parametrize(
    ("script", "said"),
    [
        (LACKING, "no LangGraph rehearsal, this LangGraph cannot build its graph: ImportError('no add_messages"),
        (REFUSING, "no LangGraph rehearsal, this LangGraph cannot build its graph: TypeError('unexpected argument"),
        (FAILING, "the LangGraph rehearsal stopped, its run failed: RuntimeError: a part of LangGraph failed"),
    ],
)
def test_a_rehearsal_that_cannot_be_done_says_so_and_the_server_goes_on(script, said):
    completed = run_python(["-c", script], PROJECTS, runner_env())

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "False\n"
    assert said in completed.stderr


THREADS_KEPT = """
import threading
from crewd_runner import langgraph_rehearsal, rehearsal
stop = threading.Event()
def chat_model():
    threading.Thread(target=stop.wait, name="left-behind").start()
    return langgraph_rehearsal.plain_answer
langgraph_rehearsal._chat_model = chat_model
try:
    langgraph_rehearsal.rehearse()
except rehearsal.ThreadsLeft as error:
    print(error)
stop.set()
"""


def test_a_rehearsal_whose_threads_outlive_it_says_so_rather_than_let_the_server_fork():
    completed = run_python(["-c", THREADS_KEPT], PROJECTS, runner_env())

    assert completed.returncode == 0, completed.stderr
    assert "the LangGraph rehearsal left threads running (left-behind)" in completed.stdout


ENVIRONMENT_PRELOAD = """
import os
from langsmith import utils
from crewd_runner import envserver
utils.get_env_var.cache_clear()
envserver.preload("graph")
# A version server takes the version's variables (a deployment's among them) after the environment server's preload.
os.environ["LANGSMITH_TRACING"] = "true"
print(utils.tracing_is_enabled())
"""


def test_an_environment_servers_preload_leaves_whether_to_trace_to_the_versions_variables():
    completed = run_python(["-c", ENVIRONMENT_PRELOAD], PROJECTS, runner_env())

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "True\n"


EVENT_LOOP_AFTER = """
import argparse, asyncio, sys
from crewd_runner import before_import
args = argparse.Namespace(graph=None, crew=None, flow=None)
setattr(args, sys.argv[1], "rehearsal")
done = before_import.rehearse(args)
# What the version's module, imported next, may do: as in a new process, the main thread gets a loop.
loop = asyncio.get_event_loop()
print(done, type(loop).__name__, loop.is_closed())
"""


@pytest.mark.parametrize("kind", ["graph", "crew"])
def test_after_a_rehearsal_the_main_thread_gets_an_event_loop_as_in_a_new_process(kind):
    completed = run_python(["-c", EVENT_LOOP_AFTER, kind], PROJECTS, runner_env())

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "True _UnixSelectorEventLoop False\n"
