"""One node that echoes its input: the smallest LangGraph graph."""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    text: str
    echo: str


def echo(state: State):
    return {"echo": state.get("text", "")}


builder = StateGraph(State)
builder.add_node("echo", echo)
builder.add_edge(START, "echo")
builder.add_edge("echo", END)
graph = builder.compile()
