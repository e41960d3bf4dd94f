"""Finds the crew, flow or graph a project names: `<module>:<attr>` or `<file.py>:<attr>`."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType


class TargetError(Exception):
    """The entry point is malformed or names nothing."""


def add_project_to_path(cwd: str) -> None:
    for folder in (os.path.join(cwd, "src"), cwd):
        if os.path.isdir(folder) and folder not in sys.path:
            sys.path.insert(0, folder)


def split_target(target: str) -> tuple[str, str]:
    module, sep, attr = target.rpartition(":")
    if not sep or not module or not attr:
        raise TargetError(f"Entry point {target!r} must look like <module>:<attr> or <file.py>:<attr>")
    return module, attr


def load_module_attr(target: str) -> object:
    module_name, attr = split_target(target)
    return _get_attr(importlib.import_module(module_name), attr, target)


def load_file_attr(target: str, cwd: str) -> object:
    file_name, attr = split_target(target)
    path = os.path.normpath(os.path.join(cwd, file_name))
    if not os.path.isfile(path):
        raise TargetError(f"Graph file {file_name!r} not found in {cwd}")
    module_name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"Graph file {file_name!r} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, so that pickling, dataclasses and typing can find the module by name.
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return _get_attr(module, attr, target)


def _get_attr(module: ModuleType, attr: str, target: str) -> object:
    value: object = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise TargetError(f"{target!r}: {module.__name__} has no attribute {attr!r}")
        value = getattr(value, part)
    return value
