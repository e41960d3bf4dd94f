"""Turns whatever a crew returns (pydantic models, dataclasses, messages, sets, bytes) into plain JSON values."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import math
import uuid
from typing import Any

_MAX_DEPTH = 60


def to_jsonable(value: object, _depth: int = 0) -> Any:
    """`value` as None, bool, int, float, str, lists and string-keyed dicts of them."""
    if _depth > _MAX_DEPTH:
        return repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): to_jsonable(item, _depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(item, _depth + 1) for item in value]
    return _convert_object(value, _depth)


def _convert_object(value: object, depth: int) -> Any:
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, depth + 1)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        try:
            return to_jsonable(model_dump(mode="json"), depth + 1)
        except Exception:  # noqa: BLE001 (any object's model_dump may raise anything: its Python values are tried next)
            return to_jsonable(model_dump(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(
            {field.name: getattr(value, field.name) for field in dataclasses.fields(value)},
            depth + 1,
        )
    return str(value)
