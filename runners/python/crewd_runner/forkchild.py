"""One run in a child the fork server forked: the run's descriptors, environment and folder, then the crew."""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import logging
import os
import select
import signal
import socket
import tempfile
from collections.abc import Callable, Iterable
from typing import NoReturn, Protocol

from . import cli, hot_pages, run_home
from .forkmessages import Exited, Handover, Learned, RunRequest, parse
from .hot_pages import Ranges, Regions

_log = logging.getLogger(__name__)


class Closable(Protocol):
    def close(self) -> None: ...


EnterHome = Callable[[str], None]

PR_SET_PDEATHSIG = 1


def die_with_server() -> None:
    """Without a sandbox's PID namespace to end it, a child still goes when its server is killed outright (where the
    C library has no prctl, the sandbox's namespace is all there is)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def become_child(inherited: Iterable[Closable]) -> None:
    """What every child does first: the server's signal handling undone, its sockets closed, a session of its own."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    for sock in inherited:
        sock.close()
    os.setsid()
    die_with_server()


def run_request(request: RunRequest, fds: list[int], home: str, load: cli.Load, enter_home: EnterHome) -> int:
    """The run: its descriptors as 0, 1 and 2, its environment with its own home, its folder, then the crew; the
    runner's exit code. The home variables crewd sent name paths this process cannot see: the run's home replaces
    them."""
    for target_fd, fd in enumerate(fds):
        os.dup2(fd, target_fd)
        os.close(fd)
    # Not os.environ.clear(), which pops one variable at a time and lists all the names again for each: 0.09 ms of
    # CPU for 43 variables, against 0.02 for deleting them one by one, with the same result.
    for name in list(os.environ):
        del os.environ[name]
    os.environ.update(request.env)
    os.environ.update(run_home.home_environment(home))
    blank_initial_environment()
    enter_home(home)
    os.chdir(request.cwd)
    reset_tempdir()
    return cli.run_over_protocol(load, io.StringIO(request.stdin))


def blank_initial_environment() -> None:
    """/proc/self/environ shows the block the server was started with (a fork keeps it; changing os.environ copies
    the strings elsewhere): zeroed, it shows nothing of the server's variables, which the run may not have. Where /proc
    cannot tell where the block is, it is left as it is."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        # env_start and env_end, fields 50 and 51 of 52 (proc(5)).
        start, end = int(fields[-3]), int(fields[-2])
        if 0 < start < end:
            ctypes.memset(start, 0, end - start)
    except (OSError, ValueError, IndexError):
        return


def run_child(
    request: RunRequest, fds: list[int], home: str, load: cli.Load, inherited: Iterable[Closable], enter_home: EnterHome
) -> NoReturn:
    """Never returns: the child runs the crew over the protocol and exits with the runner's exit code."""
    code = 1
    try:
        become_child(inherited)
        code = run_request(request, fds, home, load, enter_home)
    finally:
        os._exit(code)


def wait_as_spare(
    control: socket.socket,
    load: cli.Load,
    inherited: Iterable[Closable],
    hot_ranges: Ranges,
    regions: Regions,
    warm_up: Callable[[], None] | None,
    enter_home: EnterHome,
) -> NoReturn:
    """Never returns: a child forked ahead of its run. It does `warm_up` (what the adapter can do ahead of a run) and
    copies the pages runs write (hot_pages), stopping as soon as the run comes, while it waits on `control` for the
    run's connection (with SCM_RIGHTS) and, after it, `{"home": …, "learn": …}` and the request's header line; the
    server closing `control` without sending one retires it. Once its run is over it reports on `control`: the pages
    its run wrote when asked to learn, then its exit code."""
    code = 1
    try:
        become_child(inherited)
        warm_up_ahead(warm_up)
        hot_pages.populate(hot_ranges, stop=lambda: bool(select.select([control], [], [], 0)[0]))
        code = take_run(control, load, regions, enter_home)
    finally:
        os._exit(code)


def take_run(control: socket.socket, load: cli.Load, regions: Regions, enter_home: EnterHome) -> int:
    """The spare's run, once the server hands it over, and its report; the exit code (0: retired without a run)."""
    data, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
    if not fds:
        return 0
    chunks = [data]
    while more := control.recv(1 << 20):
        chunks.append(more)
    first, _, line = b"".join(chunks).partition(b"\n")
    handover = parse(first)
    if not isinstance(handover, Handover):
        raise ValueError(f"the fork server's handover is not one: {first[:200]!r}")
    connection = fds[0]
    # Its standard input: crewd's answers to its calls, which the server passes on.
    answers = fds[1] if len(fds) > 1 else os.open(os.devnull, os.O_RDONLY)
    descriptors = [answers, connection, os.dup(connection)]
    code = run_request(RunRequest.from_header(json.loads(line)), descriptors, handover.home, load, enter_home)
    report_end(control, code, regions if handover.learn else None)
    return code


def warm_up_ahead(warm_up: Callable[[], None] | None) -> None:
    """A warm-up that fails leaves the work to the run, which pays it as it would have; the server's log says why."""
    if warm_up is None:
        return
    try:
        warm_up()
    except Exception as error:  # noqa: BLE001 (the framework's own set-up: whatever it raises, the run does it again)
        _log.warning("crewd fork server: a child's warm-up failed, its run does that work itself: %r", error)


def report_end(control: socket.socket, code: int, regions: Regions | None) -> None:
    """The run is over: nothing more of this child reaches crewd, so the server may end the run at once, without
    waiting for this process to be torn down. The pages the run wrote go first, when asked: the server ends this
    child's process group on the exit code."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    # The server may have closed its end: it learns the exit code from the exit itself.
    with contextlib.suppress(OSError):
        if regions is not None:
            control.sendall(Learned(hot_pages.encode(hot_pages.held_ranges(regions))).encode())
        control.sendall(Exited(code).encode())


def reset_tempdir() -> None:
    """tempfile caches the folder it chose; the server's choice is not the run's."""
    tempfile.tempdir = None
