"""What the import check records of an entry point for crewd's MCP tools (docs/mcp.md): its input, output, description;
and, of a graph, its state and context schemas and its drawing, for the LangGraph API (docs/langgraph.md).

A LangGraph graph gives its input and output JSON schemas; a CrewAI crew its `{placeholders}` (of its agents' roles,
goals and backstories and its tasks' descriptions and expected outputs) as string properties; a flow its state model.
A graph factory or a function returning a crew is not called: its schemas are only known when a run calls it.
Nothing here may fail the check: whatever cannot be described is left out.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from typing import Any, TextIO

MARKER = "crewd-tool-schemas: "
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*)\}")
_FRAMEWORKS = ("crewai", "langgraph", "langchain", "pydantic")
_AGENT_FIELDS = ("role", "goal", "backstory")
_TASK_FIELDS = ("description", "expected_output")


def _own_doc(target: object) -> str | None:
    """The docstring of the project's own class or function; a framework's classes say nothing of the project."""
    if not (inspect.isclass(target) or inspect.isfunction(target)):
        return None
    if str(getattr(target, "__module__", "")).startswith(_FRAMEWORKS):
        return None
    doc = inspect.getdoc(target)
    return doc.strip() if doc else None


_JSON_TYPES: dict[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def _annotations_schema(state_type: object) -> dict[str, Any] | None:
    """A state class's fields as a schema, where pydantic cannot make one (a `typing.TypedDict` before Python 3.12)."""
    try:
        hints = typing.get_type_hints(state_type)
    except Exception:  # noqa: BLE001 (annotations naming what cannot be imported: no schema, as for any other failure)
        return None
    properties: dict[str, Any] = {}
    for name, hint in hints.items():
        base = typing.get_origin(hint) or hint
        json_type = _JSON_TYPES.get(base)
        properties[name] = {"type": json_type} if json_type else {}
    return {"type": "object", "title": getattr(state_type, "__name__", "State"), "properties": properties}


def _graph_schema(graph: Any, which: str) -> dict[str, Any] | None:
    try:
        schema: dict[str, Any] = getattr(graph, f"get_{which}_jsonschema")()
    except Exception:  # noqa: BLE001 (pydantic refuses some state types: their annotations are read instead)
        builder = getattr(graph, "builder", None)
        state_type = getattr(builder, f"{which}_schema", None)
        return _annotations_schema(state_type) if state_type is not None else None
    return schema


def _state_schema(graph: Any) -> dict[str, Any] | None:
    """The graph's state as a schema (the LangGraph API's `state_schema`): its state type, through pydantic or its
    annotations."""
    state_type = getattr(getattr(graph, "builder", None), "state_schema", None)
    if state_type is None:
        return None
    try:
        from pydantic import TypeAdapter

        schema: dict[str, Any] = TypeAdapter(state_type).json_schema()
    except Exception:  # noqa: BLE001 (pydantic refuses some state types: their annotations are read instead)
        return _annotations_schema(state_type)
    return schema


def _context_schema(graph: Any) -> dict[str, Any] | None:
    """The graph's run-time context schema, for graphs that declare one (`StateGraph(..., context_schema=...)`)."""
    context_type = getattr(getattr(graph, "builder", None), "context_schema", None)
    if context_type is None:
        return None
    try:
        schema: dict[str, Any] = graph.get_context_jsonschema()
    except Exception:  # noqa: BLE001 (pydantic refuses some context types: their annotations are read instead)
        return _annotations_schema(context_type)
    return schema


def _drawing(graph: Any) -> dict[str, Any] | None:
    """The graph's nodes and edges as LangGraph draws them (the LangGraph API's `/assistants/{id}/graph`)."""
    try:
        drawn: dict[str, Any] = graph.get_graph().to_json()
    except Exception:  # noqa: BLE001 (a graph that cannot be drawn is still a graph)
        return None
    return drawn


def _graph(target: object) -> dict[str, Any]:
    graph: Any = target
    if not hasattr(graph, "astream") and hasattr(graph, "compile"):
        graph = graph.compile()
    if not hasattr(graph, "get_input_jsonschema"):
        return {}
    found = {which: _graph_schema(graph, which) for which in ("input", "output")}
    found["state"] = _state_schema(graph)
    found["context"] = _context_schema(graph)
    found["graph"] = _drawing(graph)
    return {which: schema for which, schema in found.items() if schema is not None}


def _placeholders(texts: list[str]) -> list[str]:
    found: dict[str, None] = {}
    for text in texts:
        for name in _PLACEHOLDER.findall(text):
            found[name] = None
    return list(found)


def _crew(target: object) -> dict[str, Any]:
    crew: Any = target
    if inspect.isclass(target) and callable(getattr(target, "crew", None)):
        instance: Any = target()
        crew = instance.crew()
    if not hasattr(crew, "agents") or not hasattr(crew, "tasks"):
        return {}
    texts = [str(getattr(agent, field, "") or "") for agent in crew.agents for field in _AGENT_FIELDS]
    texts += [str(getattr(task, field, "") or "") for task in crew.tasks for field in _TASK_FIELDS]
    names = _placeholders(texts)
    properties = {name: {"type": "string"} for name in names}
    return {"input": {"type": "object", "properties": properties, "required": names}}


def _flow(target: object) -> dict[str, Any]:
    flow: Any = target() if inspect.isclass(target) else target
    state_type = type(flow.state)
    if not hasattr(state_type, "model_json_schema"):
        return {}
    schema: dict[str, Any] = state_type.model_json_schema()
    # The state's `id` is the flow's own; a caller does not give it.
    properties = {name: value for name, value in schema.get("properties", {}).items() if name != "id"}
    required = [name for name in schema.get("required", []) if name != "id"]
    return {**schema, "type": "object", "properties": properties, "required": required}


def describe(kind: str, target: object) -> dict[str, Any]:
    """The schemas (`input`, `output`) and `description` of the entry point that could be found; {} when none."""
    try:
        if kind == "graph":
            found = _graph(target)
        elif kind == "flow":
            flow_input = _flow(target)
            found = {"input": flow_input} if flow_input else {}
        else:
            found = _crew(target)
    except Exception:  # noqa: BLE001 (the project's code may raise anything; the check's verdict does not depend on it)
        found = {}
    doc = _own_doc(target)
    if doc:
        found["description"] = doc
    return found


def report(found: dict[str, Any], out: TextIO) -> None:
    """Writes the one line the build reads (src/builds/python-check.ts), when anything was found."""
    if found:
        print(MARKER + json.dumps(found, default=str, separators=(",", ":")), file=out)
