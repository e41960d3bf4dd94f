"""The runner's standard-library parts on their own: JSON conversion, event order, line splitting."""

import dataclasses
import datetime
import enum
import threading

from pydantic import BaseModel

from crewd_runner.capture import LogWriter
from crewd_runner.jsonsafe import to_jsonable


class Recorder:
    def __init__(self):
        self.events = []
        self._lock = threading.Lock()

    def emit(self, event_type, data):
        with self._lock:
            self.events.append((event_type, data))

    def log(self, message, **fields):
        self.emit("log", {"message": message, **fields})


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: float


class Message(BaseModel):
    content: str
    sent: datetime.datetime


def test_values_a_crew_returns_become_plain_json():
    sent = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    value = {
        "model": Message(content="hi", sent=sent),
        "point": Point(1, float("nan")),
        "tuple": (1, Color.RED),
        "set": {"only"},
        "bytes": b"\x00\x01",
        3: "int key",
    }

    assert to_jsonable(value) == {
        "model": {"content": "hi", "sent": "2026-01-02T03:04:05Z"},
        "point": {"x": 1, "y": None},
        "tuple": [1, "red"],
        "set": ["only"],
        "bytes": "AAE=",
        "3": "int key",
    }


def test_an_object_without_a_json_form_becomes_its_string():
    class Opaque:
        def __str__(self):
            return "opaque thing"

    assert to_jsonable({"x": Opaque()}) == {"x": "opaque thing"}


def test_the_log_writer_sends_the_whole_lines_of_each_write_as_one_event():
    recorder = Recorder()
    writer = LogWriter(recorder, "stdout", 1)

    writer.write("first ")
    writer.write("line\n")
    writer.write("\n   \n")
    writer.write("a panel\r\n  its second line  \nthird")
    assert [data["message"] for _, data in recorder.events] == ["first line", "a panel\n  its second line"]
    writer.flush()

    assert recorder.events[-1] == ("log", {"message": "third", "stream": "stdout"})


def test_terminal_escapes_are_left_out_of_log_events():
    recorder = Recorder()
    writer = LogWriter(recorder, "stdout", 1)

    writer.write("\x1b[35m\x1b[1m╭── Agent Started ──╮\x1b[0m\n\x1b[35m│\x1b[0m Researcher \x1b[35m│\x1b[0m\n")
    writer.write("\x1b]8;id=1;https://example.org\x1b\\link\x1b]8;;\x1b\\\n")
    assert [data["message"] for _, data in recorder.events] == ["╭── Agent Started ──╮\n│ Researcher │", "link"]
