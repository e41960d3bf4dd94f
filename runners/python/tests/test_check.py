"""The build's import check: `python -m crewd_runner --check --crew|--flow|--graph TARGET`."""

import pytest

from conftest import EXAMPLES, PROJECTS, run_python, runner_env


def check(kind, target, cwd=PROJECTS):
    completed = run_python(["-m", "crewd_runner", "--check", f"--{kind}", target], cwd, runner_env())
    return completed.returncode, completed.stdout.splitlines()


def test_a_graph_passes_without_being_run():
    code, report = check("graph", "echo_graph.py:graph")
    assert code == 0
    assert report[0] == "the graph echo_graph.py:graph imports: CompiledStateGraph"
    # Then what it records of its schemas (test_tool_schemas.py).
    assert report[1:] == [line for line in report[1:] if line.startswith("crewd-tool-schemas: ")]


def test_a_crewai_create_crew_project_passes():
    code, report = check("crew", "research.crew:Research", cwd=EXAMPLES / "crewai-research")
    assert code == 0, report
    assert report[0] == "the crew research.crew:Research imports: class Research"


def test_a_missing_module_fails_with_the_projects_frames_only():
    code, report = check("graph", "broken_import.py:graph")
    assert code == 1
    assert report[0] == (
        "the graph broken_import.py:graph cannot be imported: "
        "ModuleNotFoundError: No module named 'a_package_that_is_not_installed'"
    )
    assert report[1] == "Traceback (most recent call last):"
    assert report[2].endswith('broken_import.py", line 1, in <module>')
    assert not any("crewd_runner" in line or "importlib" in line for line in report[1:])


def test_a_syntax_error_fails_with_its_line(tmp_path):
    (tmp_path / "graph.py").write_text("x = 1\ndef broken(:\n    pass\n")
    code, report = check("graph", "graph.py:graph", cwd=tmp_path)
    assert code == 1
    assert report[0].startswith("the graph graph.py:graph cannot be imported: SyntaxError: ")
    assert 'graph.py", line 2' in "\n".join(report)


@pytest.mark.parametrize(
    ("kind", "target", "reason"),
    [
        ("graph", "echo_graph.py:nothing", "has no attribute 'nothing'"),
        ("crew", "crews:nothing", "has no attribute 'nothing'"),
        ("crew", "echo_graph:graph", "is neither a Crew, a @CrewBase class nor a function returning a Crew"),
        ("flow", "crews:echo_crew", "is not a CrewAI Flow class or instance"),
    ],
)
def test_a_target_that_is_not_there_or_of_another_kind_fails(kind, target, reason):
    code, report = check(kind, target)
    assert code == 1
    assert reason in report[0]


def test_a_value_that_is_no_graph_fails(tmp_path):
    (tmp_path / "graph.py").write_text("graph = 3\n")
    code, report = check("graph", "graph.py:graph", cwd=tmp_path)
    assert code == 1
    assert report == ["the graph graph.py:graph (int) is not a LangGraph graph, StateGraph or graph factory"]


def test_a_long_traceback_is_capped_with_its_end_kept(tmp_path):
    # Forty frames of their own (repeated frames would be folded into one line by Python).
    chain = "".join(f"def f{n}():\n    return f{n + 1}()\n" for n in range(40)) + "def f40():\n    return 1 / 0\n"
    (tmp_path / "deep.py").write_text(f"{chain}\nf0()\ngraph = 1\n")
    code, report = check("graph", "deep.py:graph", cwd=tmp_path)
    assert code == 1
    assert len(report) <= 61
    assert any("lines left out" in line for line in report)
    assert report[-1] == "ZeroDivisionError: division by zero"
