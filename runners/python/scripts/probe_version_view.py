"""Whether a version server forked in an environment server's sandbox can narrow that sandbox to its own version
(docs/ARCHITECTURE.md, "Memory per deployment: environment servers", steps 2 and 3), on this machine: a user, mount,
PID, IPC and UTS namespace of its own, a read-only tmpfs over the portal folder with only its own version's folder
bound back, a fresh /proc, every capability dropped. Then it checks what it sees and what it can undo.

`probe_version_view.py PORTAL VERSION`, run as the environment server would be: in bwrap with crewd's namespace flags
and setpriv, PORTAL holding VERSION and at least one other folder, e.g.

    bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --ro-bind /usr /usr --symlink usr/lib /lib \\
      --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev --tmpfs /tmp \\
      --ro-bind PORTAL PORTAL -- setpriv --inh-caps=-all --bounding-set=-all --no-new-privs -- \\
      python3 probe_version_view.py PORTAL v1

Prints one line per check and exits 1 when one fails. Measured on Linux 6.18 with bwrap 0.8.0: every check passes
for a non-root user. For root, the user map onto root is refused (EPERM: it needs CAP_SETFCAP, which setpriv dropped)
unless bwrap gets `--uid 1000 --gid 1000`; then bwrap, able to write to /proc/irq and /proc/bus, has covered them, and
the fresh /proc is refused (EPERM: it would show more than the covered one).
"""

import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNS = (
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x20000,
)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    8,
    32,
    4096,
    16384,
    1 << 18,
)
MNT_DETACH = 2
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522
LAST_CAPABILITY = 63


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def checked(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encoded = [value.encode() if value is not None else None for value in (source, target, fstype, data)]
    checked(libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]), f"mount on {target}")


def narrow(portal: str, version: str) -> None:
    """Steps 2 and 3 up to the fresh /proc: own namespaces, the portal showing only `version`, read-only."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    checked(libc.unshare(flags), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as control:
            control.write(text)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Opened in the new mount namespace: a descriptor of the old one cannot be bind-mounted (EINVAL).
    own = os.open(os.path.join(portal, version), os.O_PATH | os.O_DIRECTORY)
    mount("tmpfs", portal, "tmpfs", MS_NOSUID | MS_NODEV, "size=16k,mode=0755")
    target = os.path.join(portal, version)
    os.mkdir(target)
    mount(f"/proc/self/fd/{own}", target, None, MS_BIND | MS_REC)
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    mount(None, portal, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.close(own)


def drop_capabilities() -> None:
    for capability in range(LAST_CAPABILITY + 1):
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    checked(libc.capset(ctypes.byref(CapHeader(LINUX_CAPABILITY_VERSION_3, 0)), (CapData * 2)()), "capset")
    checked(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def refused(action: str, result: int) -> tuple[bool, str]:
    return result != 0, f"{action}: " + (f"refused ({os.strerror(ctypes.get_errno())})" if result else "ALLOWED")


def checks(portal: str, version: str) -> list[tuple[bool, str]]:
    results = [
        (os.listdir(portal) == [version], f"the portal shows {sorted(os.listdir(portal))}"),
        (os.getpid() == 1, f"this process is pid {os.getpid()} of its namespace"),
        (
            [name for name in os.listdir("/proc") if name.isdigit()] == ["1"],
            "/proc shows this namespace's processes only",
        ),
    ]
    with open("/proc/self/status") as status:
        effective = next(line.split()[1] for line in status if line.startswith("CapEff"))
    results.append((int(effective, 16) == 0, f"effective capabilities {effective}"))
    results.append(refused("unmounting the portal's cover", libc.umount2(portal.encode(), MNT_DETACH)))
    try:
        with open(os.path.join(portal, version, ".probe"), "w"):
            results.append((False, "writing into the version's folder: ALLOWED"))
    except OSError as error:
        results.append((True, f"writing into the version's folder: refused ({error.strerror})"))
    # A further user namespace has every capability again, over mounts locked together with what they cover.
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0:
        results.append(refused("unmounting the cover from a further user namespace", libc.umount2(portal.encode(), 2)))
    return results


def main() -> int:
    portal, version = os.path.abspath(sys.argv[1]), sys.argv[2]
    narrow(portal, version)
    pid = os.fork()
    if pid:
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
    # The first process of the PID namespace: its own /proc, then no capability left.
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    drop_capabilities()
    results = checks(portal, version)
    for passed, line in results:
        print(("ok    " if passed else "FAIL  ") + line, flush=True)
    return 0 if all(passed for passed, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
