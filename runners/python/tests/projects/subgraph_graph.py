"""An interrupt inside a subgraph: resuming it needs the subgraph's checkpoint as well as the parent's."""

import os
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    steps: list


def before(state: State):
    with open(os.environ["SUBGRAPH_LOG"], "a") as log:
        log.write("before ran\n")
    return {"steps": [*state.get("steps", []), "inner-before"]}


def ask(state: State):
    answer = interrupt("inner question")
    return {"steps": [*state["steps"], f"inner-answer:{answer}"]}


inner_builder = StateGraph(State)
inner_builder.add_node("before", before)
inner_builder.add_node("ask", ask)
inner_builder.add_edge(START, "before")
inner_builder.add_edge("before", "ask")
inner_builder.add_edge("ask", END)
inner = inner_builder.compile()


def finish(state: State):
    return {"steps": [*state["steps"], "outer-finish"]}


builder = StateGraph(State)
builder.add_node("inner", inner)
builder.add_node("finish", finish)
builder.add_edge(START, "inner")
builder.add_edge("inner", "finish")
builder.add_edge("finish", END)
graph = builder.compile()
