"""One run in a child the fork server forked: the run's descriptors, environment and folder, then the crew."""

import base64
import ctypes
import io
import json
import os
import select
import signal
import socket
import tempfile

from . import cli, hot_pages, run_home

PR_SET_PDEATHSIG = 1


def die_with_server():
    """Without a sandbox's PID namespace to end it, a child still goes when its server is killed outright."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def become_child(inherited):
    """What every child does first: the server's signal handling undone, its sockets closed, a session of its own."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    for sock in inherited:
        sock.close()
    os.setsid()
    die_with_server()


def run_request(header, fds, home, load, enter_home):
    """The run: its descriptors as 0, 1 and 2, its environment with its own home, its folder, then the crew; the
    runner's exit code. The home variables crewd sent name paths this process cannot see: the run's home replaces
    them."""
    for target_fd, fd in enumerate(fds):
        os.dup2(fd, target_fd)
        os.close(fd)
    os.environ.clear()
    os.environ.update(header.get("env") or {})
    os.environ.update(run_home.home_environment(home))
    blank_initial_environment()
    enter_home(home)
    os.chdir(header["cwd"])
    reset_tempdir()
    return cli.run_over_protocol(load, io.StringIO(header["stdin"]))


def blank_initial_environment():
    """/proc/self/environ shows the block the server was started with (a fork keeps it; changing os.environ copies
    the strings elsewhere): zeroed, it shows nothing of the server's variables, which the run may not have."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        # env_start and env_end, fields 50 and 51 of 52 (proc(5)).
        start, end = int(fields[-3]), int(fields[-2])
        if 0 < start < end:
            ctypes.memset(start, 0, end - start)
    except (OSError, ValueError, IndexError):
        pass


def run_child(header, fds, home, load, inherited, enter_home):
    """Never returns: the child runs the crew over the protocol and exits with the runner's exit code."""
    code = 1
    try:
        become_child(inherited)
        code = run_request(header, fds, home, load, enter_home)
    finally:
        os._exit(code)


def wait_as_spare(control, load, inherited, hot_ranges, regions, warm_up, enter_home):
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
        data, fds, _, _ = socket.recv_fds(control, 1 << 20, 1)
        if not fds:
            code = 0
            return
        chunks = [data]
        while more := control.recv(1 << 20):
            chunks.append(more)
        first, _, line = b"".join(chunks).partition(b"\n")
        handover = json.loads(first)
        connection = fds[0]
        descriptors = [os.open(os.devnull, os.O_RDONLY), connection, os.dup(connection)]
        code = run_request(json.loads(line), descriptors, handover["home"], load, enter_home)
        report_end(control, code, regions if handover.get("learn") else None)
    finally:
        os._exit(code)


def warm_up_ahead(warm_up):
    """A warm-up that fails leaves the work to the run, which pays it as it would have."""
    if warm_up is not None:
        try:
            warm_up()
        except Exception:
            pass


def report_end(control, code, regions):
    """The run is over: nothing more of this child reaches crewd, so the server may end the run at once, without
    waiting for this process to be torn down. The pages the run wrote go first, when asked: the server ends this
    child's process group on the exit code."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    try:
        if regions is not None:
            learned = base64.b64encode(hot_pages.encode(hot_pages.held_ranges(regions))).decode()
            control.sendall(json.dumps({"learned": learned}).encode() + b"\n")
        control.sendall(json.dumps({"exit_code": code}).encode() + b"\n")
    except OSError:
        pass  # the server learns the exit code from the exit itself


def reset_tempdir():
    """tempfile caches the folder it chose; the server's choice is not the run's."""
    tempfile.tempdir = None
