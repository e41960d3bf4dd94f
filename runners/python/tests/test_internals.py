"""The private parts of CrewAI and LangGraph that crewd_runner.internals uses are all there in the pinned releases: this
fails when a new CrewAI or LangGraph removes or renames one, before a fork server relies on it."""

import json
import os

from crewd_runner import internals

from conftest import run_python, runner_env

PRIVATE_PARTS = """
import json, sys, threading
from crewai import Crew
from crewai.events import crewai_event_bus as bus
from crewai.telemetry.telemetry import Telemetry
from langgraph.checkpoint.serde import _msgpack
from crewd_runner import internals

found = {
    "known": internals.crewai_known(),
    "stoppable": internals.bus_threads_stoppable(bus),
    "telemetry": hasattr(Telemetry, internals.TELEMETRY_ATTRIBUTE),
    "crew_store": internals.CREW_STORE_ATTRIBUTE in Crew.__private_attributes__,
    "msgpack": all(hasattr(_msgpack, name) for name in ("SAFE_MSGPACK_TYPES", "SAFE_MSGPACK_METHODS")),
    # MCPNativeTool's call is mended exactly where it fails (Python 3.11), and is there to mend
    "mcp_tool": internals.mend_mcp_tool_calls() == (sys.version_info < (3, 12)),
}
internals.start_bus_threads(bus)
found["started"] = internals.bus_threads_started(bus) and threading.active_count() > 1
found["bus"] = [name for name in internals.BUS_ATTRIBUTES if not hasattr(bus, name)]
internals.stop_bus_threads(bus)
found["stopped"] = not internals.bus_threads_started(bus) and threading.active_count() == 1
print(json.dumps(found))
"""


def test_the_pinned_crewai_and_langgraph_have_every_private_part_the_runner_uses():
    completed = run_python(["-c", PRIVATE_PARTS], os.getcwd(), runner_env())

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout.splitlines()[-1]) == {
        "known": True,
        "stoppable": True,
        "telemetry": True,
        "crew_store": True,
        "msgpack": True,
        "mcp_tool": True,
        "started": True,
        "bus": [],  # missing attributes of the event bus once its threads run
        "stopped": True,
    }


def test_safe_types_come_from_langgraph():
    types, methods = internals.langgraph_safe_msgpack()
    assert ("langchain_core.messages.human", "HumanMessage") in types
    assert methods


def test_versions_compare_by_their_numbers():
    assert internals.version_tuple("1.15.30") == (1, 15, 30)
    assert internals.version_tuple("1.16.0rc1") == (1, 16, 0)
    assert internals.version_tuple("2.0") >= internals.KNOWN_CREWAI[1]
    assert internals.KNOWN_CREWAI[0] <= internals.version_tuple("1.15.0") < internals.KNOWN_CREWAI[1]


OUTSIDE = """
import json, crewai
from crewai.events import crewai_event_bus as bus
from crewd_runner import internals
crewai.__version__ = "2.0.0"
internals.start_bus_threads(bus)
print(json.dumps([internals.crewai_known(), internals.bus_threads_stoppable(bus), internals.bus_threads_started(bus)]))
"""


def test_a_crewai_outside_the_known_versions_is_left_to_itself_and_the_log_says_so():
    completed = run_python(["-c", OUTSIDE], os.getcwd(), runner_env())

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout.splitlines()[-1]) == [False, False, False]
    assert "CrewAI 2.0.0 is outside the versions whose internals the runner uses (1.15 up to 2.0)" in completed.stderr
