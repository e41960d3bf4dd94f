"""The final protocol event of a run, written only after the crew's own output has been flushed."""

from typing import Any, NamedTuple


class Outcome(NamedTuple):
    event_type: str
    data: dict[str, Any]
