"""A graph that uses the store LangGraph hands it at run time: a sync node taking `store`, an async one calling
`get_store()`. Given `user`, it writes a note under ("notes", user) and reads ("shared",) "greeting"."""

from typing import TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore


class State(TypedDict, total=False):
    user: str
    greeting: object
    notes: list[str]
    namespaces: list[list[str]]


def write(state: State, *, store: BaseStore) -> State:
    store.put(("notes", state["user"]), "first", {"text": f"hello from {state['user']}"})
    greeting = store.get(("shared",), "greeting")
    return {"greeting": greeting.value if greeting else None}


async def read(state: State) -> State:
    store = get_store()
    found = await store.asearch(("notes",), filter={"text": f"hello from {state['user']}"})
    namespaces = await store.alist_namespaces(prefix=("notes",))
    return {"notes": [item.key for item in found], "namespaces": [list(namespace) for namespace in namespaces]}


builder = StateGraph(State)
builder.add_node("write", write)
builder.add_node("read", read)
builder.add_edge(START, "write")
builder.add_edge("write", "read")
builder.add_edge("read", END)
graph = builder.compile()
