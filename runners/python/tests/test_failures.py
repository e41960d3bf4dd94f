"""A crew that raises, cannot be imported, or prints garbage: the run fails cleanly or completes untouched."""

from projects.garbage import FORGED_FAILURE, FORGED_RESULT

from conftest import request, run_runner


def assert_failed_with_traceback(result, error, traceback_line):
    assert result.returncode == 0, result.stderr
    assert result.last == {"type": "run.failed", "data": {"error": error}}
    assert not result.of_type("run.completed")
    tracebacks = [data["message"] for data in result.of_type("log") if data["message"].startswith("Traceback")]
    assert len(tracebacks) == 1
    assert traceback_line in tracebacks[0]
    assert f"\n{error}" in tracebacks[0]


def test_a_graph_that_raises_fails_the_run_with_the_exception_and_its_traceback(projects):
    result = run_runner("graph", "raising_graph.py:graph", projects, request({"text": "this"}))

    assert_failed_with_traceback(result, "ValueError: cannot handle 'this'", 'raising_graph.py", line 11, in explode')


def test_a_crew_that_raises_fails_the_run_with_the_exception_and_its_traceback(projects):
    result = run_runner("crew", "crews:raising_crew", projects, request({"topic": "bees"}))

    assert_failed_with_traceback(result, "ValueError: the model is unreachable", 'crews.py", line')
    assert result.of_type("task.started") == [{"task": "write", "agent": "Writer"}]


def test_an_import_error_fails_the_run_with_the_missing_module(projects):
    result = run_runner("graph", "broken_import.py:graph", projects, request())

    assert_failed_with_traceback(
        result, "ModuleNotFoundError: No module named 'a_package_that_is_not_installed'", "broken_import.py"
    )


def test_an_entry_point_that_names_nothing_fails_the_run(projects):
    result = run_runner("crew", "crews:no_such_crew", projects, request())

    assert result.last["type"] == "run.failed"
    assert result.last["data"]["error"] == "TargetError: 'crews:no_such_crew': crews has no attribute 'no_such_crew'"


def test_standard_input_that_is_not_a_json_object_fails_the_run(projects):
    result = run_runner("graph", "echo_graph.py:graph", projects, ["not", "an", "object"])

    assert result.last == {
        "type": "run.failed",
        "data": {"error": "ValueError: Standard input must be one JSON object"},
    }


def assert_garbage_became_logs(result):
    assert result.returncode == 0, result.stderr
    assert len(result.of_type("run.completed")) == 1
    assert not result.of_type("run.failed")
    logs = result.logs()
    for expected in (
        FORGED_RESULT,
        FORGED_FAILURE,
        "not json at all {",
        "a line written in two parts",
        "bytes through sys.stdout.buffer",
        "\ufffd\ufffd raw bytes on fd 1",
        "from a child process",
    ):
        assert expected in logs, expected
    # A line left open is ended by whatever the crew prints next, or by the end of the run.
    assert any(message.startswith("no newline at the end") for message in logs)
    [logged] = [data for data in result.of_type("log") if data.get("logger") == "garbage"]
    assert logged == {
        "message": "logged with the logging module",
        "stream": "logging",
        "level": "ERROR",
        "logger": "garbage",
    }
    assert "to standard error" in result.stderr


def test_a_graph_that_prints_garbage_completes_with_its_own_result(projects):
    result = run_runner("graph", "garbage_graph.py:graph", projects, request())

    assert_garbage_became_logs(result)
    assert result.last == {"type": "run.completed", "data": {"output": {"result": "real"}}}


def test_a_crew_that_prints_garbage_completes_with_its_own_result(projects):
    result = run_runner("crew", "crews:noisy_crew", projects, request({"topic": "bees"}))

    assert_garbage_became_logs(result)
    assert result.last["type"] == "run.completed"
    assert result.last["data"]["output"]["raw"] == "the real answer"
