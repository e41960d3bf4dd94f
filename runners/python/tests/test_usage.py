"""Every LLM call's usage as an `llm.call` event, in crewd's names (CONTRACTS §15)."""

from conftest import request, run_runner

CREW_CALL = {
    "input_tokens": 120,
    "output_tokens": 30,
    "cached_input_tokens": 20,
    "reasoning_tokens": 0,
    "total_tokens": 150,
}
GRAPH_CALL = {
    "input_tokens": 50,
    "output_tokens": 8,
    "cached_input_tokens": 10,
    "reasoning_tokens": 3,
    "total_tokens": 58,
}


def test_a_crew_reports_each_call_s_usage_in_crewd_s_names(projects):
    result = run_runner("crew", "usage_projects:metered_crew", projects, request())

    assert result.returncode == 0, result.stderr
    calls = result.of_type("llm.call")
    assert [(call["model"], call["usage"], call["agent"]) for call in calls] == [
        ("gpt-4o-mini", CREW_CALL, "Writer")
    ] * 2
    assert [call["task"] for call in calls] == ["title", "summary"]
    # The crew's own count agrees with the calls: nothing is left to add.
    token_usage = result.last["data"]["output"]["token_usage"]
    assert token_usage["total_tokens"] == 2 * CREW_CALL["total_tokens"]


def test_a_crew_s_token_count_covers_calls_that_reported_no_usage(projects):
    result = run_runner("crew", "usage_projects:silent_crew", projects, request())

    assert result.returncode == 0, result.stderr
    calls = result.of_type("llm.call")
    assert [call.get("usage") for call in calls[:-1]] == [None, None]
    assert calls[-1] == {
        "model": "gpt-4o-mini",
        "usage": {key: 2 * value for key, value in CREW_CALL.items()},
        "unattributed": True,
    }


def test_a_graph_reports_invoked_and_streamed_calls_from_usage_metadata(projects):
    result = run_runner("graph", "usage_projects.py:metered_graph", projects, request())

    assert result.returncode == 0, result.stderr
    assert result.last["data"]["output"]["answers"] == ["one two three", "one two three"]
    calls = result.of_type("llm.call")
    assert [(call["model"], call["provider"], call["usage"]) for call in calls] == [
        ("fake-metered", "fake", GRAPH_CALL)
    ] * 2
    for call in calls:
        assert call["duration_ms"] >= 0
        assert call["started_at"].endswith("Z")
