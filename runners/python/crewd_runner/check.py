"""`python -m crewd_runner --check --crew|--flow|--graph TARGET`: the build's import check.

Imports the entry point as a run would and checks that it is what its kind says, without running it. The report goes
to standard output: one line saying what was found, or on failure one line saying why, then the traceback (the frames
of the project's code, at most MAX_LINES lines). What the project's code prints meanwhile goes to standard error.
Exit code 0 when the entry point is fine, 1 when it is not.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from typing import TextIO

from . import loader, tool_schemas

MAX_LINES = 60
_RUNNER_DIR = os.path.dirname(os.path.abspath(__file__))
_IMPORTLIB_DIR = os.path.dirname(importlib.__file__)


def _kind_error(kind: str, target: object) -> str | None:
    """None when `target` is what `kind` takes (as the adapters prepare it), else why not. Functions are not called:
    a factory is only known to be one when a run calls it."""
    if kind == "graph":
        if hasattr(target, "astream") or hasattr(target, "compile") or callable(target):
            return None
        return "is not a LangGraph graph, StateGraph or graph factory"
    if kind == "flow":
        from crewai.flow.flow import Flow

        if isinstance(target, Flow) or (isinstance(target, type) and issubclass(target, Flow)):
            return None
        return "is not a CrewAI Flow class or instance"
    from crewai import Crew

    if isinstance(target, Crew) or callable(getattr(target, "crew", None)):
        return None
    if callable(target) and not isinstance(target, type):
        return None
    return "is neither a Crew, a @CrewBase class nor a function returning a Crew"


def _described(value: object) -> str:
    name = getattr(value, "__name__", None)
    kind = "class" if isinstance(value, type) else type(value).__name__
    return f"{kind} {name}" if name and isinstance(value, type) else kind


def _project_frames(stack: traceback.StackSummary) -> traceback.StackSummary:
    """The frames of the project's code: the runner's own and importlib's are left out."""
    others = (_RUNNER_DIR, _IMPORTLIB_DIR, "<frozen importlib")
    kept = [frame for frame in stack if not frame.filename.startswith(others)]
    return traceback.StackSummary.from_list(kept)


def traceback_lines(error: BaseException) -> list[str]:
    """The traceback of `error`, the project's frames only, capped at MAX_LINES (its end kept: the error is last)."""
    report = traceback.TracebackException.from_exception(error)
    report.stack = _project_frames(report.stack)
    lines = "".join(report.format()).rstrip("\n").split("\n")
    if len(lines) <= MAX_LINES:
        return lines
    left_out = len(lines) - MAX_LINES + 1
    return [lines[0], f"  … {left_out} lines left out", *lines[-(MAX_LINES - 2) :]]


def _load(kind: str, target: str, cwd: str) -> object:
    loader.add_project_to_path(cwd)
    if kind == "graph":
        return loader.load_file_attr(target, cwd)
    return loader.load_module_attr(target)


def check(kind: str, target: str, cwd: str, out: TextIO) -> int:
    """Writes the report to `out`; answers the exit code."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            value = _load(kind, target, cwd)
            wrong = _kind_error(kind, value)
    except (Exception, SystemExit) as error:  # noqa: BLE001 (reported: the import check says why it failed)
        message = str(error)
        summary = f"{type(error).__name__}: {message}" if message else type(error).__name__
        print(f"the {kind} {target} cannot be imported: {summary}", file=out)
        for line in traceback_lines(error):
            print(line, file=out)
        return 1
    if wrong:
        print(f"the {kind} {target} ({_described(value)}) {wrong}", file=out)
        return 1
    print(f"the {kind} {target} imports: {_described(value)}", file=out)
    with contextlib.redirect_stdout(sys.stderr):
        found = tool_schemas.describe(kind, value)
    tool_schemas.report(found, out)
    return 0


def main(args: argparse.Namespace, cwd: str) -> int:
    kind = "graph" if args.graph else "flow" if args.flow else "crew"
    code = check(kind, args.graph or args.flow or args.crew, cwd, sys.stdout)
    sys.stdout.flush()
    return code
