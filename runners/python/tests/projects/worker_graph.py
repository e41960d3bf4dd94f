"""For the worker's tests: reports what the run sees as its own (environment, home, output), waits on a file when
asked (in Python, so that a cancel reaches it), blocks in C (time.sleep, which a cancel does not end), burns CPU, or
crashes its process."""

import logging
import os
import sys
import time
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    say: str
    wait_for: str
    block: float
    burn: float
    crash: bool
    run_id: str
    home: str
    tmp: str
    expanded: str
    pid: int


def report(state: State):
    if state.get("wait_for"):
        while not os.path.exists(state["wait_for"]):
            time.sleep(0.01)
    if state.get("block"):
        time.sleep(state["block"])
    if state.get("burn"):
        started = time.process_time()
        while time.process_time() - started < state["burn"]:
            pass
    if state.get("crash"):
        os.abort()
    if state.get("say"):
        print(f"says {state['say']}")
        sys.stderr.write(f"warns {state['say']}\n")
        logging.getLogger("worker_graph").warning("logs %s", state["say"])
    os.environ["LEFT_BY_RUN"] = os.environ.get("CREWD_RUN_ID", "")
    return {
        "run_id": os.environ.get("CREWD_RUN_ID", ""),
        "home": os.environ["HOME"],
        "tmp": os.environ["TMPDIR"],
        "expanded": os.path.expanduser("~"),
        "pid": os.getpid(),
    }


builder = StateGraph(State)
builder.add_node("report", report)
builder.add_edge(START, "report")
builder.add_edge("report", END)
graph = builder.compile()
