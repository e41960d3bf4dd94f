"""`python -m crewd_runner --crew|--flow|--graph <target>`: one run of a Python crew over the runner protocol
(`--check`: the build's import check instead, see check.py)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

from . import loader, store_channel
from .capture import OutputCapture
from .outcome import Outcome
from .protocol import Emitter, Request
from .stream_modes import take_stream_request

_log = logging.getLogger(__name__)

# An adapter's run: the loaded target, the request, the emitter; the run's outcome.
RunEntry = Callable[[Any, Request, Emitter], Outcome]
# What imports the crew and picks its adapter; called inside the run, so that its errors fail the run.
Load = Callable[[], tuple[RunEntry, object]]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m crewd_runner", description=__doc__)
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--crew", metavar="MODULE:ATTR", help="a @CrewBase class, a Crew, or a function returning one")
    kind.add_argument("--flow", metavar="MODULE:ATTR", help="a CrewAI Flow class or instance")
    kind.add_argument("--graph", metavar="FILE.py:ATTR", help="a LangGraph graph, relative to the project folder")
    parser.add_argument("--check", action="store_true", help="only import the target and check its kind (builds)")
    return parser.parse_args(argv)


def read_request(stream: TextIO) -> Request:
    """The request: crewd writes it as one line, and may keep standard input open after it for answers (store_channel);
    a request of several lines (written by hand) is read to the end of the input."""
    text = stream.readline()
    try:
        request = json.loads(text)
    except ValueError:
        text += stream.read()
        request = json.loads(text) if text.strip() else {}
    if not isinstance(request, dict):
        raise ValueError("Standard input must be one JSON object")
    return request


def load_entry(args: argparse.Namespace, cwd: str) -> tuple[RunEntry, object]:
    """(runner function, loaded target). The import happens here, so that its errors fail the run."""
    loader.add_project_to_path(cwd)
    if args.graph:
        from .langgraph_adapter import run_graph

        return run_graph, loader.load_file_attr(args.graph, cwd)
    from . import crewai_adapter

    if args.crew:
        return crewai_adapter.run_crew, loader.load_module_attr(args.crew)
    return crewai_adapter.run_flow, loader.load_module_attr(args.flow)


def warm_up(args: argparse.Namespace) -> Callable[[], None] | None:
    """Pays in a fork server what each run would pay again; returns what a forked child does before its run comes
    (or None)."""
    if args.graph:
        from .langgraph_adapter import warm_up as warm_up_adapter

        warm_up_adapter()
        return None
    from . import crewai_adapter

    crewai_adapter.warm_up()
    return crewai_adapter.warm_up_child


def failure(error: BaseException, emitter: Emitter) -> Outcome:
    """The traceback as a `log` event, the run failed with the exception's type and message."""
    emitter.log("".join(traceback.format_exception(error)).rstrip("\n"), stream="stderr")
    message = str(error)
    return Outcome("run.failed", {"error": f"{type(error).__name__}: {message}" if message else type(error).__name__})


def run(load: Load, stdin: TextIO, emitter: Emitter, answer_lines: TextIO | None = None) -> Outcome:
    """The run's outcome; any error, the crew's import included, fails the run instead of the process. `answer_lines`:
    where crewd's answers to the run's calls come (store_channel), once the request is read."""
    try:
        request = take_stream_request(read_request(stdin))
        if answer_lines is not None:
            answers = store_channel.Answers()
            store_channel.read_answers(answer_lines, answers)
            store_channel.current.set(answers)
        run_entry, target = load()
        return run_entry(target, request, emitter)
    except (Exception, SystemExit) as error:  # noqa: BLE001 (reported: the run fails with it)
        return failure(error, emitter)


def run_over_protocol(load: Load, stdin: TextIO | None = None) -> int:
    """One run with the crew's own output turned into `log` events; the result line is written last. The request is
    read from `stdin` (standard input unless given); crewd's answers come on standard input after it (a fork server's
    child gets them there from its server)."""
    emitter = Emitter(os.dup(1))
    capture = OutputCapture(emitter)
    capture.start()
    # Standard input, whatever the crew's code makes of sys.stdin.
    answer_lines = sys.stdin if stdin is None else open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    try:
        outcome = run(load, sys.stdin if stdin is None else stdin, emitter, answer_lines)
    finally:
        capture.stop()
    emitter.emit(outcome.event_type, outcome.data)
    emitter.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cwd = os.getcwd()
    if args.check:
        from . import check

        return check.main(args, cwd)
    return run_over_protocol(lambda: load_entry(args, cwd))
