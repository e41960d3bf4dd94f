from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    text: str


def explode(state: State):
    raise ValueError(f"cannot handle {state.get('text')!r}")


builder = StateGraph(State)
builder.add_node("explode", explode)
builder.add_edge(START, "explode")
builder.add_edge("explode", END)
graph = builder.compile()
