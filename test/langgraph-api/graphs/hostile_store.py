"""A graph whose node sends store calls crewd must refuse or keep to the run's own organization: each names another
organization, or bends a namespace, through the store's own channel (the same `store.call` line a hostile runner
could write). It returns what each call answered: the result, or the error."""

from typing import Any, TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    victim_org: str
    answers: dict[str, Any]


def attack(state: State) -> State:
    call = get_store()._call  # the store's raw call: fields go on the line as they are
    org = state["victim_org"]
    tries: dict[str, dict[str, Any]] = {
        "get_naming_org": {"op": "get", "namespace": ["shared"], "key": "greeting", "org_id": org},
        "put_naming_org": {"op": "put", "namespace": ["shared"], "key": "greeting", "value": {"x": 1}, "orgId": org},
        "get_dotted_label": {"op": "get", "namespace": ["shared.greeting"], "key": "greeting"},
        "get_empty_label": {"op": "get", "namespace": ["", "shared"], "key": "greeting"},
        "get_plain": {"op": "get", "namespace": ["shared"], "key": "greeting"},
        "search_everything": {"op": "search", "namespace_prefix": [], "limit": 1000},
        "search_naming_org": {"op": "search", "namespace_prefix": [], "organization": org},
        "list_everything": {"op": "list_namespaces"},
        "unknown_op": {"op": "sql", "query": "select * from langgraph_store_items"},
        "semantic_search": {"op": "search", "namespace_prefix": ["shared"], "query": "greeting"},
    }
    answers: dict[str, Any] = {}
    for name, fields in tries.items():
        try:
            answers[name] = {"result": call(fields)}
        except Exception as error:  # noqa: BLE001 (the answer is what the test looks at)
            answers[name] = {"error": str(error)}
    return {"answers": answers}


builder = StateGraph(State)
builder.add_node("attack", attack)
builder.add_edge(START, "attack")
builder.add_edge("attack", END)
graph = builder.compile()
