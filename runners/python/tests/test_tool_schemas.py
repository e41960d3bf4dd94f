"""What the import check records for MCP tools: its `crewd-tool-schemas:` line (crewd_runner/tool_schemas.py)."""

import json

import pytest

from conftest import EXAMPLES
from test_check import check

MARKER = "crewd-tool-schemas: "


def recorded(report):
    lines = [line for line in report if line.startswith(MARKER)]
    assert len(lines) == 1, report
    return json.loads(lines[0][len(MARKER) :])


def test_a_graph_records_its_input_and_output_schemas():
    code, report = check("graph", "echo_graph.py:graph")
    assert code == 0, report
    schemas = recorded(report)
    for which in ("input", "output"):
        assert schemas[which]["type"] == "object"
        assert schemas[which]["properties"]["text"] == {"type": "string"}
        assert schemas[which]["properties"]["echo"] == {"type": "string"}


def test_a_graph_records_its_state_schema_and_its_drawing_for_the_langgraph_api():
    code, report = check("graph", "echo_graph.py:graph")
    assert code == 0, report
    schemas = recorded(report)
    assert schemas["state"]["properties"]["text"] == {"type": "string"}
    nodes = [node["id"] for node in schemas["graph"]["nodes"]]
    assert nodes[0] == "__start__" and nodes[-1] == "__end__" and len(nodes) > 2, nodes
    assert all({"source", "target"} <= set(edge) for edge in schemas["graph"]["edges"])
    assert "context" not in schemas  # the graph declares no context schema


def test_a_graph_factory_is_not_called_and_records_nothing(tmp_path):
    (tmp_path / "graph.py").write_text("def graph():\n    raise SystemExit('a factory is never called by the check')\n")
    code, report = check("graph", "graph.py:graph", cwd=tmp_path)
    assert code == 0, report
    assert not any(line.startswith(MARKER) for line in report)


def test_a_crew_records_its_placeholders_as_strings():
    pytest.importorskip("crewai")
    code, report = check("crew", "research.crew:Research", cwd=EXAMPLES / "crewai-research")
    assert code == 0, report
    schemas = recorded(report)
    assert schemas["input"] == {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}


def test_a_flow_records_its_state_model_without_its_id():
    pytest.importorskip("crewai")
    code, report = check("flow", "crews:OutlineFlow")
    assert code == 0, report
    schema = recorded(report)["input"]
    assert {"topic", "steps"} <= set(schema["properties"])
    assert "id" not in schema["properties"]
    assert "id" not in schema.get("required", [])
