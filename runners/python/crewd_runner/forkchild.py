"""One run in a child the fork server forked: the run's descriptors, environment and folder, then the crew."""

import io
import os
import shutil
import signal
import tempfile

from . import cli

PR_SET_PDEATHSIG = 1


def die_with_server():
    """Without a sandbox's PID namespace to end it, a child still goes when its server is killed outright."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def run_child(header, fds, tmp, load, inherited):
    """Never returns: the child runs the crew over the protocol and exits with the runner's exit code."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        for sock in inherited:
            sock.close()
        os.setsid()
        die_with_server()
        for target_fd, fd in enumerate(fds):
            os.dup2(fd, target_fd)
            os.close(fd)
        os.environ.clear()
        os.environ.update(header.get("env") or {})
        if tmp:
            os.environ["TMPDIR"] = tmp
        os.chdir(header["cwd"])
        reset_tempdir()
        code = cli.run_over_protocol(load, io.StringIO(header["stdin"]))
    finally:
        os._exit(code)


def reset_tempdir():
    """tempfile caches the folder it chose; the server's choice is not the run's."""
    tempfile.tempdir = None


def remove_private_tmp(folder):
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
