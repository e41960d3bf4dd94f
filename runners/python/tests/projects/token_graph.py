"""A chat graph whose model is LangChain's fake chat model, streaming one token per word: `chat` answers the last
message (`tokens` words, `pause` seconds apart; fails for fewer than none), a subgraph `notes` counts the answers, and
`review` asks for approval with `interrupt` when the input says `ask`."""

import asyncio
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    tokens: int
    pause: float
    ask: bool
    answers: int
    approved: Any


async def chat(state: State) -> dict[str, Any]:
    if state.get("tokens", 5) < 0:
        raise ValueError("tokens must not be negative")
    words = " ".join(f"w{index}" for index in range(state.get("tokens", 5)))
    model = GenericFakeChatModel(messages=iter([AIMessage(content=words)]))
    get_stream_writer()({"step": "chat", "tokens": state.get("tokens", 5)})
    answer = None
    async for chunk in model.astream(state.get("messages", [])):
        answer = chunk if answer is None else answer + chunk
        if state.get("pause"):
            await asyncio.sleep(state["pause"])
    assert answer is not None
    return {"messages": [AIMessage(content=answer.content, id=answer.id)]}


def count(state: State) -> dict[str, Any]:
    return {"answers": state.get("answers", 0) + 1}


notes_builder = StateGraph(State)
notes_builder.add_node("count", count)
notes_builder.add_edge(START, "count")
notes_builder.add_edge("count", END)
notes = notes_builder.compile()


def review(state: State) -> dict[str, Any]:
    if not state.get("ask"):
        return {}
    return {"approved": interrupt({"question": "Send this answer?"})}


builder = StateGraph(State)
builder.add_node("chat", chat)
builder.add_node("notes", notes)
builder.add_node("review", review)
builder.add_edge(START, "chat")
builder.add_edge("chat", "notes")
builder.add_edge("notes", "review")
builder.add_edge("review", END)
graph = builder.compile()
