"""An agent that answers with the help of a tool, then waits for a person to approve its answer.

model → tools → model → approval (interrupt) → END. Resume the interrupt with `{"approved": true}` or
`{"approved": false, "note": "…"}`.
"""

from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from agent.model import chat_model
from agent.tools import word_count

TOOLS = [word_count]


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    approved: bool
    answers: int


def ask(state: State):
    """Turns the run input's `question` into the next human message."""
    return {"messages": [HumanMessage(content=state.get("question", ""))]}


def call_model(state: State):
    reply = chat_model(TOOLS).invoke(state["messages"])
    get_stream_writer()({"step": "model", "tool_calls": len(getattr(reply, "tool_calls", []) or [])})
    return {"messages": [reply]}


def route_after_model(state: State):
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "approval"


def approval(state: State):
    decision = interrupt({"question": "Send this answer?", "answer": state["messages"][-1].content})
    approved = bool(decision.get("approved")) if isinstance(decision, dict) else bool(decision)
    return {"approved": approved, "answers": state.get("answers", 0) + (1 if approved else 0)}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.add_node("model", call_model)
builder.add_node("tools", ToolNode(TOOLS))
builder.add_node("approval", approval)
builder.add_edge(START, "ask")
builder.add_edge("ask", "model")
builder.add_conditional_edges("model", route_after_model, ["tools", "approval"])
builder.add_edge("tools", "model")
builder.add_edge("approval", END)

graph = builder.compile()
