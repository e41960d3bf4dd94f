from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from garbage import print_garbage


class State(TypedDict, total=False):
    result: str


def noisy(state: State):
    print_garbage()
    return {"result": "real"}


builder = StateGraph(State)
builder.add_node("noisy", noisy)
builder.add_edge(START, "noisy")
builder.add_edge("noisy", END)
graph = builder.compile()
