"""A test-session process that has imported CrewAI and LangGraph once and forks a child per `python -m MODULE ...` or
`python -c CODE` a test asks for: the child is that interpreter from its first line on (its argv, folder, environment,
standard input and output), but does not import CrewAI and LangGraph again (about 2 to 5 s of CPU per process).

`python zygote.py SOCKET`, with the environment every child starts from (conftest.runner_env()). A request is one
connection: a JSON line {"args": [...], "cwd": ..., "env": {...}} with three file descriptors (the child's standard
input, output and error); the answer is the child's pid, a line, then its exit code, a line, once it ended.
Children are forked one at a time: a test waits for its child before asking for another.
"""

import array
import atexit
import gc
import json
import os
import runpy
import socket
import sys
import tempfile
import types

# What the children would each import: nothing of the runner's own, nor of the test projects.
PRELOAD = ("crewai", "langgraph.graph")


def receive(connection):
    fds = array.array("i")
    data, ancillary, _, _ = connection.recvmsg(1 << 20, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    while not data.endswith(b"\n"):
        more = connection.recv(1 << 20)
        if not more:
            raise EOFError("request cut short")
        data += more
    return json.loads(data), list(fds)


def serve(listener):
    """Returns only in a forked child, with its request; the server itself loops until killed."""
    while True:
        connection, _ = listener.accept()
        try:
            request, fds = receive(connection)
        except (OSError, ValueError, EOFError):
            connection.close()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            listener.close()
            connection.close()
            return request, fds
        for fd in fds:
            os.close(fd)
        try:
            connection.sendall(f"{pid}\n".encode())
            _, status = os.waitpid(pid, 0)
            connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        except OSError:
            pass  # the test gave up on it (timeout) and killed it
        finally:
            connection.close()


def become(request, fds):
    """The child: what `python ARGS` started in `cwd` with `env` would be once its interpreter is up."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # found again from the child's TMPDIR, as a new interpreter would
    args = request["args"]
    if args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        sys.path[0] = request["cwd"]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args[0] == "-c":
        sys.argv = ["-c", *args[2:]]
        sys.path[0] = ""
        main_module = types.ModuleType("__main__")
        sys.modules["__main__"] = main_module
        exec(compile(args[1], "<string>", "exec"), main_module.__dict__)
    else:
        raise SystemExit(f"zygote: only -m and -c, not {args[0]!r}")


class Child:
    exit_code = None


def end_here():
    """A child's interpreter, once its threads were joined and every other exit handler ran (this one, registered
    first, runs last): its exit code, without tearing down the modules it was forked with (over 1 s of CPU)."""
    if Child.exit_code is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(Child.exit_code)


def main():
    atexit.register(end_here)
    for name in PRELOAD:
        __import__(name)
    # What the import made lives in every child: their collections need not walk it.
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sys.argv[1])
    listener.listen(8)
    request, fds = serve(listener)
    Child.exit_code = 1
    try:
        become(request, fds)
        Child.exit_code = 0
    except SystemExit as ended:
        Child.exit_code = exit_code_of(ended.code)
        raise


def exit_code_of(code):
    """As the interpreter makes its exit code of SystemExit's."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    return 1


if __name__ == "__main__":
    main()
