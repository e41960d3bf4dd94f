"""One run in a child the fork server forked: the run's descriptors, environment and folder, then the crew."""

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


def enter_folder(path, fd):
    """The run's folder by path when this process sees the very same folder there, else through its descriptor."""
    if fd is None:
        if path:
            os.chdir(path)
        return
    try:
        same = bool(path) and os.path.samestat(os.stat(path), os.fstat(fd))
    except OSError:
        same = False
    if same:
        os.chdir(path)
    else:
        # The folder is not visible to the server (another mount namespace): relative paths work, os.getcwd() fails.
        os.fchdir(fd)
    os.close(fd)


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
        for target_fd, fd in enumerate(fds[:3]):
            os.dup2(fd, target_fd)
            os.close(fd)
        os.environ.clear()
        os.environ.update(header.get("env") or {})
        if tmp:
            os.environ["TMPDIR"] = tmp
        enter_folder(header.get("cwd"), fds[3] if len(fds) > 3 else None)
        reset_tempdir()
        code = cli.run_over_protocol(load)
    finally:
        os._exit(code)


def reset_tempdir():
    """tempfile caches the folder it chose; the server's choice is not the run's."""
    tempfile.tempdir = None


def remove_private_tmp(folder):
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
