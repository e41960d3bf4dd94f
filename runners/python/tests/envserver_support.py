"""What the environment server's tests share: an environment server started in bwrap as crewd's sandbox starts a
server (its own user, PID, IPC and UTS namespaces, fresh /proc, /dev and /tmp, capabilities dropped), the
environment's folder writable and its portal read-only, and version servers asked of it as crewd asks."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conftest import RUNNER_ROOT, runner_env
from forkserver_support import SECRET

VERSION_SECRET = "7a" * 32
SANDBOX_HOME = "/home/crewd"


def python_folders():
    """What the sandbox must show for the test environment's python to run: its venv and its base installation."""
    venv = Path(sys.prefix)
    base = Path(os.path.realpath(sys.executable)).parent.parent
    return sorted({str(venv), str(base), str(RUNNER_ROOT)})


def bwrap_command(sockets, portal, *inner):
    bwrap = shutil.which("bwrap")
    args = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
    args += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for name in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink(f"/{name}"):
            args += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", SANDBOX_HOME]
    for shown in python_folders():
        args += ["--ro-bind", shown, shown]
    args += ["--bind", str(sockets), str(sockets), "--ro-bind", str(portal), str(portal)]
    if os.getuid() == 0:
        args += ["--dir", "/.crewd/proc"]
    args += ["--remount-ro", "/", "--chdir", "/", "--"]
    if os.getuid() == 0:
        # As crewd's sandbox starts an environment server when crewd runs as root (Confinement.notRoot): a read-only
        # proc mount under a cover, which lets version servers mount a /proc of their own, then user 1000 of one more
        # user namespace, since a version server's user map may not map root (that needs CAP_SETFCAP).
        script = "mount -t proc -o ro,nosuid,nodev,noexec proc /.crewd/proc && "
        script += 'mount -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=0 cover /.crewd && exec "$@"'
        args += ["/bin/sh", "-c", script, "sh", "unshare", "--user", "--map-user=1000", "--map-group=1000", "--"]
    args += ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return [*args, *inner]


class Environment:
    """An environment server of `kind` in its sandbox; `folder` holds `s/`, its sockets, and `v/`, its portal."""

    def __init__(self, kind="graph", *options, settings=None):
        """`settings`: the server's environment over the tests' (a None value removes the variable)."""
        # Outside /tmp, as crewd's DATA_DIR is: the sandbox's /tmp is one of the folders each version gets anew.
        self.folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="crewd-env-test-")) / "env"
        self.portal = self.folder / "v"
        self.portal.mkdir(parents=True)
        self.sockets = self.folder / "s"
        self.sockets.mkdir()
        self.socket = self.sockets / "e"
        self.count = 0
        env = runner_env({"HOME": SANDBOX_HOME, "TMPDIR": "/tmp"})
        for name, value in (settings or {}).items():
            if value is None:
                env.pop(name)
            else:
                env[name] = value
        command = [sys.executable, "-m", "crewd_runner.envserver", "--kind", kind, "--folder", str(self.folder)]
        command += ["--socket", str(self.socket)]
        command += ["--private", "/tmp", "--private", SANDBOX_HOME, *options]
        self.process = subprocess.Popen(
            bwrap_command(self.sockets, self.portal, *command), env=env, stdin=subprocess.PIPE, cwd="/"
        )
        self.process.stdin.write(f"{SECRET}\n".encode())
        self.process.stdin.close()
        wait_listening(self.socket, self.process)

    def add_version(self, name, files):
        """A version's built files in the portal: {relative path: text}."""
        folder = self.portal / name
        folder.mkdir()
        for relative, text in files.items():
            (folder / relative).write_text(text)
        return folder

    def ask(self, folder, entry, env=None, secret=SECRET):
        """Asks for a version server of the version in `folder`; its socket path once it listens (or what the
        environment server answered, as a string, when none came)."""
        self.count += 1
        own = self.sockets / str(self.count)
        own.mkdir(mode=0o700)
        path = own / "s"
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(str(self.socket))
        request = {"secret": secret, "entry": entry, "folder": str(folder), "socket": str(path)}
        version = {"secret": VERSION_SECRET, "env": runner_env(env)}
        connection.sendall(json.dumps(request).encode() + b"\n" + json.dumps(version).encode() + b"\n")
        connection.settimeout(60)
        answer = b""
        try:
            while data := connection.recv(4096):
                answer += data
        except ConnectionResetError:
            pass  # closed with the version's line unread: refused
        connection.close()
        return path if answer == b'{"listening": true}\n' else answer.decode()

    def stop(self):
        self.process.terminate()
        self.process.wait(30)
        shutil.rmtree(self.folder.parent, ignore_errors=True)


def wait_listening(path, process):
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        if os.path.exists(path):
            return
        time.sleep(0.1)
    raise AssertionError("the server did not start listening")


def run_in_version(path, cwd, run_input, env=None):
    """One run through a version server (forkserver's protocol, the version server's secret)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(str(path))
    stdin = json.dumps({"run_id": "run_env", "input": run_input, "thread": None, "command": None})
    header = {"secret": VERSION_SECRET, "env": runner_env(env), "cwd": str(cwd), "stdin": stdin}
    connection.sendall(json.dumps(header).encode() + b"\n")
    connection.settimeout(60)
    received = b""
    while data := connection.recv(65536):
        received += data
    connection.close()
    output, _, final = received.partition(b"\0")
    events = [json.loads(line) for line in output.decode().splitlines() if line.startswith("{")]
    return events, json.loads(final)


def descendants(pid):
    """The host pids of every process under `pid`."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def memory_holds(pid, needle):
    """Whether the process's memory holds `needle` anywhere it can be read (as root: /proc/PID/mem)."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            regions = [line.split() for line in maps]
    except FileNotFoundError:
        return False  # it ended
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        for region in regions:
            if "r" not in region[1] or (len(region) > 5 and region[5] in ("[vvar]", "[vsyscall]")):
                continue
            start, end = (int(value, 16) for value in region[0].split("-"))
            try:
                memory.seek(start)
                if needle in memory.read(end - start):
                    return True
            except OSError:
                continue
    return False
