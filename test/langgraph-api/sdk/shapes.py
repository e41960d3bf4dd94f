"""What every SDK test script shares: the clients (sync and async) made as an app makes them, and a check that a value
has the shape the SDK's own types (langgraph_sdk.schema) declare, so a field of the wrong shape fails the test."""

from __future__ import annotations

import json
import os
import sys
import types
import typing
from datetime import datetime

from langgraph_sdk import get_client, get_sync_client

URL = os.environ["CREWD_LANGGRAPH_URL"]
KEY = os.environ["CREWD_API_KEY"]
# The official server adds `extracted` only when a search asks for it.
SOMETIMES_ABSENT = {"extracted"}


def clients():
    return get_sync_client(url=URL, api_key=KEY), get_client(url=URL, api_key=KEY)


def _matches(value: object, hint: object) -> bool:
    origin = typing.get_origin(hint)
    if hint is typing.Any or hint is object:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is datetime:
        return isinstance(value, str) and datetime.fromisoformat(value) is not None
    if isinstance(hint, type) and typing.is_typeddict(hint):
        return isinstance(value, dict) and not shape_errors(value, hint)
    if origin in (dict, typing.Mapping) or hint is dict:
        return isinstance(value, dict)
    if origin in (list, typing.Sequence, tuple) or hint in (list, tuple):
        return isinstance(value, (list, tuple))
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True


def shape_errors(value: dict, typed: type) -> list[str]:
    hints = typing.get_type_hints(typed, include_extras=True)
    # A schema module with postponed annotations leaves NotRequired keys in __required_keys__.
    optional = {
        key
        for key, hint in hints.items()
        if typing.get_origin(hint) is typing.NotRequired
    }
    hints = typing.get_type_hints(typed)
    errors = []
    for key in typed.__required_keys__:
        if key not in value:
            if key not in SOMETIMES_ABSENT and key not in optional:
                errors.append(f"{typed.__name__}.{key} is missing")
        elif not _matches(value[key], hints[key]):
            errors.append(
                f"{typed.__name__}.{key} = {value[key]!r} is not {hints[key]}"
            )
    return errors


def check(value: object, typed: type) -> None:
    """Fails the test when `value` (or each of a list) is not what the SDK's type declares."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        assert isinstance(item, dict), (
            f"{typed.__name__}: expected an object, got {item!r}"
        )
        errors = shape_errors(item, typed)
        assert not errors, "; ".join(errors)


def status_of(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def done(result: dict) -> None:
    """The one line the vitest side reads."""
    sys.stdout.write(json.dumps(result) + "\n")
