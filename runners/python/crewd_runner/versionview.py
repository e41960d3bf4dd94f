"""A version server's own view inside its environment server's sandbox (docs/ARCHITECTURE.md, "Memory per
deployment: environment servers"): namespaces of its own, the environment's folder (its sockets and its portal of
versions' files) covered but for the version's own socket folder and built files, fresh private folders (/tmp, the
home, /dev/shm), a PID namespace of its own whose first process serves the version, and no capability left.

The environment server's sandbox (bwrap) gave it a user namespace whose capabilities its init dropped; `unshare` of a
new user namespace gives them back over the new namespaces only. Mounts that came from the environment's sandbox are
locked together with what covers them: a version server cannot uncover another version's files.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
from dataclasses import dataclass

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522
LAST_CAPABILITY = 63
# The covers: small, read-only once the version's own folders are bound in.
COVER_OPTIONS = "size=64k,mode=0755"


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _checked(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encoded = [value.encode() if value is not None else None for value in (source, target, fstype, data)]
    _checked(_libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]), f"mount on {target}")


@dataclass(frozen=True)
class View:
    """What a version server keeps of its environment's sandbox. `environment_folder`: the environment server's
    folder (its socket, its portal, its version servers' socket folders), covered but for `socket_folder` (writable)
    and `version_folder` (read-only), both inside it. `private`: folders the environment's sandbox made writable,
    each made a fresh tmpfs of the same size."""

    environment_folder: str
    socket_folder: str
    version_folder: str
    private: tuple[str, ...]


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)


def narrow(view: View) -> None:
    """Namespaces of its own, then the covers. Afterwards this process sees its own files only; the next process
    it forks is the first of its new PID namespace (`enter_pid_namespace`)."""
    for path in (view.socket_folder, view.version_folder):
        if not _inside(path, view.environment_folder) or os.path.abspath(path) == view.environment_folder:
            raise ValueError(f"{path} is not inside the environment's folder {view.environment_folder}")
    sizes = {folder: _size_of(folder) for folder in view.private if os.path.isdir(folder)}
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    _checked(_libc.unshare(flags), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as control:
            control.write(text)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Opened in the new mount namespace: a descriptor of the old one cannot be bind-mounted (EINVAL).
    kept = {
        view.socket_folder: os.open(view.socket_folder, os.O_PATH | os.O_DIRECTORY),
        view.version_folder: os.open(view.version_folder, os.O_PATH | os.O_DIRECTORY),
    }
    # The private folders first: the environment's folder may lie in one (a test's /tmp), and is made again there.
    for folder, size in sizes.items():
        mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    cover = view.environment_folder
    os.makedirs(cover, exist_ok=True)
    mount("tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV, COVER_OPTIONS)
    for path, descriptor in kept.items():
        os.makedirs(path, exist_ok=True)
        mount(f"/proc/self/fd/{descriptor}", path, None, MS_BIND | MS_REC)
        os.close(descriptor)
    read_only = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    mount(None, view.version_folder, None, read_only)
    mount(None, cover, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _size_of(folder: str) -> int:
    info = os.statvfs(folder)
    return max(info.f_blocks * info.f_frsize, 1 << 20)


def enter_pid_namespace(pid_max: int | None, leave_behind: list[int]) -> None:
    """Forks the first process of the new PID namespace, which forks the version server and returns in it. This
    process stays behind, waits for the first one and exits with its status (it passes SIGTERM on); the first one
    waits for the server, reaps the namespace's orphans, and exits with the server (its death ends the namespace), as
    bwrap's init does in a sandbox. It bounds the namespace's processes first (`pid_max`, written through the
    environment's /proc where the kernel keeps it per namespace), then mounts a /proc of the namespace: only the
    version's processes (`mount_own_proc`), and drops every capability. Both waiters close the descriptors in
    `leave_behind` (they are the server's)."""
    pid = os.fork()
    if pid:
        for descriptor in leave_behind:
            os.close(descriptor)
        _stay_behind(pid)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if pid_max is not None and pid_max_per_namespace():
        # Through the environment's /proc, before it is covered: the version's own /proc may be read-only.
        with contextlib.suppress(OSError), open("/proc/sys/kernel/pid_max", "w") as control:
            control.write(str(pid_max))
    mount_own_proc()
    drop_capabilities()
    server = os.fork()
    if server:
        for descriptor in leave_behind:
            os.close(descriptor)
        _init(server)


def pid_max_per_namespace(release: str | None = None) -> bool:
    """Linux 6.14 and newer keep pid_max per PID namespace. Before, it is the machine's: never written then (as
    crewd's root, user 0 of the machine, the write would lower the whole machine's bound)."""
    numbers = (release or os.uname().release).split("-")[0].split(".")
    try:
        return (int(numbers[0]), int(numbers[1])) >= (6, 14)
    except (IndexError, ValueError):
        return False


def mount_own_proc() -> str:
    """A /proc of this process's PID namespace over the environment's. The kernel gives a user namespace a fresh
    /proc only where a proc mount as open is in view already (no locked mount over a part of it). Where crewd runs
    as root, bwrap covered parts of the environment's /proc (/proc/irq, /proc/bus), but the environment's sandbox
    holds a read-only one under a cover of its own (bubblewrap.ts, Confinement.notRoot): the fresh /proc is then
    read-only as that one is. Where neither is allowed, /proc is an empty read-only folder, so that no process of the
    environment or of another version shows. Returns which: "own", "own read-only" or "empty"."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    try:
        mount("proc", "/proc", "proc", flags)
        return "own"
    except PermissionError:
        pass
    try:
        mount("proc", "/proc", "proc", flags | MS_RDONLY)
        return "own read-only"
    except PermissionError:
        mount("tmpfs", "/proc", "tmpfs", flags | MS_RDONLY, "size=4k,mode=0555")
        return "empty"


def _init(server: int) -> None:
    """The namespace's first process: reaps whatever ends in it until the server itself ended, then exits with it."""

    def pass_on(_signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):  # it ended already
            os.kill(server, signal.SIGTERM)

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if pid == server:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _stay_behind(pid: int) -> None:
    def pass_on(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def drop_capabilities() -> None:
    for capability in range(LAST_CAPABILITY + 1):
        _libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    _checked(_libc.capset(ctypes.byref(_CapHeader(LINUX_CAPABILITY_VERSION_3, 0)), (_CapData * 2)()), "capset")
    _checked(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def read_pid_max() -> int | None:
    try:
        with open("/proc/sys/kernel/pid_max") as control:
            return int(control.read().strip())
    except (OSError, ValueError):
        return None
