"""The fork server's CrewAI rehearsal: a built-in crew's kickoff before the version's crew is imported, which must
leave nothing behind that a run could see."""

import json
import subprocess
import sys

from conftest import PROJECTS, request, run_python, runner_env
from test_forkserver import run_forked, start_server

AFTER_REHEARSAL = """
import json, os, tempfile, threading
from crewai.events import crewai_event_bus
from crewai.telemetry.telemetry import Telemetry
from crewd_runner import crewai_rehearsal, internals
def stored():
    found = os.walk(os.environ["XDG_DATA_HOME"])
    return sorted(os.path.join(folder, name) for folder, _, names in found for name in names)
environment, telemetry, stored_before = dict(os.environ), internals.telemetry_instance(Telemetry), stored()
done = crewai_rehearsal.rehearse()
print(json.dumps({
    "rehearsed": done,
    "threads": threading.active_count(),
    "bus_started": internals.bus_threads_started(crewai_event_bus),
    "environment_kept": dict(os.environ) == environment,
    "telemetry_kept": internals.telemetry_instance(Telemetry) is telemetry,
    "left_in_tmp": os.listdir(tempfile.gettempdir()),
    "stored_kept": stored() == stored_before,
}))
"""


def test_the_rehearsal_leaves_no_thread_output_file_or_setting_behind(tmp_path):
    tmp, data = tmp_path / "tmp", tmp_path / "data"
    tmp.mkdir()
    env = runner_env({"TMPDIR": str(tmp), "XDG_DATA_HOME": str(data)})
    env.pop("OTEL_SDK_DISABLED")

    completed = subprocess.run(
        [sys.executable, "-c", AFTER_REHEARSAL], env=env, capture_output=True, text=True, timeout=120
    )

    assert completed.returncode == 0, completed.stderr
    # Its output went nowhere: the script's one line is all that reached standard output.
    [line] = completed.stdout.splitlines()
    assert json.loads(line) == {
        "rehearsed": True,
        "threads": 1,
        "bus_started": False,
        "environment_kept": True,
        "telemetry_kept": True,
        "left_in_tmp": [],
        "stored_kept": True,
    }


TELEMETRY_ON = """
import json, os, threading
from crewd_runner import crewai_rehearsal
done = crewai_rehearsal.rehearse()
threads = threading.active_count()
child = os.fork()
if child == 0:
    os.write(1, str(len(os.listdir("/proc/self/task"))).encode())
    os._exit(0)
os.waitpid(child, 0)
print(json.dumps({"rehearsed": done, "threads": threads}))
"""


def test_crewai_imported_first_by_the_rehearsal_with_telemetry_on_leaves_one_thread_in_the_server_and_its_forks():
    """CrewAI's telemetry is on unless a setting turns it off, and a server (an environment server above all, which
    never gets a deployment's variables) imports CrewAI first in its rehearsal. Imported with telemetry on, CrewAI's
    exporter thread kept the server from rehearsing, came back in every fork, and a version server then failed to take
    its namespaces (unshare: EINVAL), so every run of a CrewAI version was a cold one."""
    env = runner_env()
    for name in ("CREWAI_DISABLE_TELEMETRY", "CREWAI_DISABLE_TRACKING", "OTEL_SDK_DISABLED", "CREWAI_TRACING_ENABLED"):
        env.pop(name)
    # Should telemetry be sent after all, it goes to a closed local port, never off the machine.
    env.update({"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""})

    completed = run_python(["-c", TELEMETRY_ON], PROJECTS, env, fresh=True)

    assert completed.returncode == 0, completed.stderr
    child_threads, report = completed.stdout[0], completed.stdout[1:]
    assert json.loads(report) == {"rehearsed": True, "threads": 1}
    assert child_threads == "1"


THREADS_KEPT = """
from crewd_runner import crewai_rehearsal, internals, rehearsal
internals.stop_bus_threads = lambda bus: None
try:
    crewai_rehearsal.rehearse()
except rehearsal.ThreadsLeft as error:
    print(error)
"""


def test_a_rehearsal_whose_threads_outlive_it_says_so_rather_than_let_the_server_fork():
    completed = run_python(["-c", THREADS_KEPT], PROJECTS, runner_env())

    assert completed.returncode == 0, completed.stderr
    assert "the CrewAI rehearsal left threads running (CrewAIEventsLoop" in completed.stdout


def test_no_listener_of_the_crews_module_hears_the_rehearsal(tmp_path):
    witness_file = tmp_path / "witnessed"
    socket_path = tmp_path / "crew.sock"
    server = start_server("crew", "rehearsal_witness:crew", socket_path, env={"WITNESS_FILE": str(witness_file)})
    try:
        result = run_forked(socket_path, PROJECTS, request({"topic": "bees"}), {"WITNESS_FILE": str(witness_file)})
    finally:
        server.terminate()
        server.wait(10)

    assert result.returncode == 0, result.stderr
    assert result.last["data"]["output"]["raw"] == "done"
    # One kickoff heard, the run's, in its child: not the server's two rehearsal kickoffs.
    [pid] = witness_file.read_text().split()
    assert int(pid) != server.pid
