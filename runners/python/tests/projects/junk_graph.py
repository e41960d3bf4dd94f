"""A graph whose node writes lines that are not the runner's on each socket it holds whose peer is its parent (in a
fork server's child: the socket it reports on), then answers with how many it wrote to."""

import os
import socket
import stat
import struct
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

JUNK = b'[1]\n{"learned": "not base64!"}\n{"exit_code": "0"}\n{"signal": 9}\nnot json\n'


class State(TypedDict, total=False):
    written: int


def _peer_pid(fd: int) -> int | None:
    if not stat.S_ISSOCK(os.fstat(fd).st_mode):
        return None
    sock = socket.socket(fileno=os.dup(fd))
    try:
        credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    finally:
        sock.close()
    return struct.unpack("3i", credentials)[0]


def write_junk(_state: State) -> State:
    written = 0
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and _peer_pid(fd) == os.getppid():
                os.write(fd, JUNK)
                written += 1
        except OSError:
            continue
    return {"written": written}


builder = StateGraph(State)
builder.add_node("write_junk", write_junk)
builder.add_edge(START, "write_junk")
builder.add_edge("write_junk", END)
graph = builder.compile()
