"""A small chat graph (a messages channel, LangChain's fake chat model called from a sync node) whose module, which a
fork server imports before it forks, makes each run report the modules it imported: a `test.imported` event before
the run's last line. A run forked from a server that rehearsed should import none."""

import sys
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from crewd_runner import cli

_run = cli.run


def run_reporting_imports(load, stdin, emitter, answer_lines=None):
    before = set(sys.modules)
    outcome = _run(load, stdin, emitter, answer_lines)
    emitter.emit("test.imported", {"modules": sorted(set(sys.modules) - before)})
    return outcome


cli.run = run_reporting_imports


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def chat(state: State) -> dict[str, Any]:
    model = GenericFakeChatModel(messages=iter([AIMessage(content="hello there")]))
    return {"messages": [model.invoke(state["messages"])]}


builder = StateGraph(State)
builder.add_node("chat", chat)
builder.add_edge(START, "chat")
builder.add_edge("chat", END)
graph = builder.compile()
