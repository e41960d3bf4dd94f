"""A home of its own for every run a fork server forks (CONTRACTS §12 "Home").

crewd puts HOME, the XDG folders and TMPDIR of a run where crewd sees its run's area; a fork server's child cannot
see those paths, so it gets a private folder of the server's instead, made for the run and removed after it. The
server itself works in a home of its own, so that what its imports write (CrewAI makes its storage folder when it is
imported) never lands in a home a run shares. Paths the server's imports computed from that home and kept in module
constants (CrewAI's storage paths) are found once, before the server forks, and each child points them into its run's
home.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
from pathlib import PurePath
from typing import Any

# Where a module keeps a path: its namespace and the name in it.
KeptPaths = list[tuple[dict[str, Any], str]]

# Each variable and where it points inside a home's folder.
HOME_VARIABLES = {
    "HOME": "home",
    "XDG_DATA_HOME": "home/.local/share",
    "XDG_CACHE_HOME": "home/.cache",
    "XDG_CONFIG_HOME": "home/.config",
    "XDG_STATE_HOME": "home/.local/state",
    "TMPDIR": "tmp",
}


def home_environment(folder: str) -> dict[str, str]:
    return {name: os.path.join(folder, inside) for name, inside in HOME_VARIABLES.items()}


def make_home(parent: str, name: str) -> str:
    """`parent/name` (0700) with the folders of HOME_VARIABLES made; the path."""
    folder = os.path.join(parent, name)
    os.mkdir(folder, 0o700)
    for inside in HOME_VARIABLES.values():
        os.makedirs(os.path.join(folder, inside), exist_ok=True)
    return folder


class Homes:
    """The server's own home and, beside it, a folder holding one home per run. That folder can be passed but not
    listed (0711) and each run's home has an unguessable name, so a run finds no other run's home."""

    def __init__(self, root: str | None = None) -> None:
        """`root`: where (a version server keeps its environment server's path: the paths its imports kept point
        there); a new folder in TMPDIR unless given."""
        if root is None:
            root = tempfile.mkdtemp(prefix="crewd-server-")
        else:
            os.makedirs(root, 0o700)
        self.root = root
        self.server = make_home(self.root, "server")
        self.runs = os.path.join(self.root, "runs")
        os.mkdir(self.runs, 0o711)
        os.chmod(self.runs, 0o711)  # the umask may have taken bits away
        os.environ.update(home_environment(self.server))
        tempfile.tempdir = None

    def for_run(self) -> str:
        """A new home for a run: what the server's imports left in its own home, copied, and an empty TMPDIR."""
        folder = os.path.join(self.runs, secrets.token_hex(16))
        shutil.copytree(self.server, folder, symlinks=True, ignore=lambda at, _: ["tmp"] if at == self.server else [])
        os.mkdir(os.path.join(folder, "tmp"), 0o700)
        return folder

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def remove_home(folder: str | None) -> None:
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def _under(value: object, prefix: str) -> bool:
    # type() rather than isinstance(): a module's lazy proxy may answer `__class__` by importing what it stands for.
    kind = type(value)
    if kind is str:
        text = str(value)
        return text.startswith(prefix) and (len(text) == len(prefix) or text[len(prefix)] == os.sep)
    return issubclass(kind, PurePath) and _under(str(value), prefix)


def kept_paths(prefix: str, passed_over: frozenset[str] = frozenset()) -> KeptPaths:
    """Where the modules keep a path inside `prefix` (a constant computed at import, such as CrewAI's storage paths):
    (namespace, name) pairs. Objects made at import are not looked into: a crew built at import gets its storage
    again in each run (crewai_adapter). The modules named in `passed_over` are not read: a version server forked
    from its environment server passes over the environment's modules (their paths were found there), since reading
    a value writes its reference count, which would copy the environment's pages into the version server."""
    found: KeptPaths = []
    for name, module in list(sys.modules.items()):
        if name in passed_over:
            continue
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            found.extend((namespace, name) for name, value in list(namespace.items()) if _under(value, prefix))
    return found


def move_kept_paths(found: KeptPaths, old: str, new: str) -> None:
    """Points each path `kept_paths` found from the `old` home into the `new` one, keeping its type."""
    for namespace, name in found:
        value = namespace.get(name)
        if value is not None and _under(value, old):
            namespace[name] = type(value)(new + str(value)[len(old) :])
