"""The rehearsal a fork server or an environment server runs before it imports the version's crew or graph: a CrewAI
kickoff of a built-in crew, or runs of a built-in LangGraph graph (crewai_rehearsal, langgraph_rehearsal), so that its
forked children find a first run's work done. A module of its own: the rehearsals run through `cli.run`, so cli does
not import them."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

_log = logging.getLogger(__name__)
# Before Python 3.14, asyncio.get_event_loop() in the main thread makes a loop where none was ever set.
IMPLICIT_LOOP = sys.version_info < (3, 14)


def rehearse(args: argparse.Namespace) -> bool:
    """Before the crew's or graph's module is imported: a CrewAI kickoff of a built-in crew, or runs of a built-in
    LangGraph graph, so that forked children find a first run's work done (crewai_rehearsal, langgraph_rehearsal).

    `asyncio.run` leaves the main thread's event loop set, to none: `asyncio.get_event_loop()` there then raises
    where a new process makes a loop (before Python 3.14). asyncio's policy is renewed after the rehearsal, so that
    the module imported next (which may call it) finds what a new process has; with a policy other than asyncio's own
    (installed as the interpreter started) there is no rehearsal."""
    if IMPLICIT_LOOP and type(asyncio.get_event_loop_policy()) is not asyncio.DefaultEventLoopPolicy:
        _log.warning("crewd fork server: no rehearsal, asyncio's event loop policy is not its own")
        return False
    try:
        if args.graph:
            from . import langgraph_rehearsal

            return langgraph_rehearsal.rehearse()
        from . import crewai_rehearsal

        return crewai_rehearsal.rehearse()
    finally:
        if IMPLICIT_LOOP:
            asyncio.set_event_loop_policy(None)
