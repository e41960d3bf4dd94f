"""Reports the environment (its variables and what /proc/self/environ shows), folders, home and tmp it runs in; sleeps
first when the input asks, writing its pid down; leaves a process in its group, or a thread writing to standard error,
behind when asked."""

import os
import subprocess
import tempfile
import threading
import time
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    sleep: float
    mark: bool
    leave_process: bool
    chatter: bool
    run_id: str
    cwd: str
    tmp: str
    homes: dict
    environ_block: list


def report(state: State):
    if state.get("sleep"):
        with open("child.pid", "w") as pid_file:
            pid_file.write(str(os.getpid()))
        time.sleep(state["sleep"])
    if state.get("mark"):
        with open("here.txt", "w") as marker:
            marker.write("written relative to the run's folder")
    if state.get("leave_process"):
        left = subprocess.Popen(["sleep", "60"])
        with open("left.pid", "w") as pid_file:
            pid_file.write(str(left.pid))
    if state.get("chatter"):
        threading.Thread(target=chatter, daemon=True).start()
    return {
        "run_id": os.environ.get("CREWD_RUN_ID", ""),
        "cwd": os.getcwd(),
        "tmp": tempfile.gettempdir(),
        "homes": {name: os.environ.get(name) for name in HOME_VARIABLES},
        "environ_block": [entry.decode(errors="replace") for entry in read_environ_block().split(b"\0") if entry],
    }


HOME_VARIABLES = ("HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "TMPDIR")


def read_environ_block():
    with open("/proc/self/environ", "rb") as block:
        return block.read()


def chatter():
    while True:
        os.write(2, b"still here\n")
        time.sleep(0.0005)


builder = StateGraph(State)
builder.add_node("report", report)
builder.add_edge(START, "report")
builder.add_edge("report", END)
graph = builder.compile()
