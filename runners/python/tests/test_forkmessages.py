"""The fork server's lines: each message's bytes as crewd and the children read them, and what the one parse makes of
lines that are not messages (a child's crew may write anything on its sockets)."""

import pytest

from crewd_runner.forkmessages import Exited, Handover, Learned, Refused, RunRequest, Signal, parse


@pytest.mark.parametrize(
    ("message", "line"),
    [
        (Signal(15), b'{"signal": 15}\n'),
        (Exited(0), b'{"exit_code": 0}\n'),
        (Refused("the request header ended early"), b'{"error": "the request header ended early"}\n'),
        (Handover("/tmp/crewd-server-x/runs/ab", True), b'{"home": "/tmp/crewd-server-x/runs/ab", "learn": true}\n'),
        (Learned(b"\x00\x10"), b'{"learned": "ABA="}\n'),
    ],
)
def test_each_message_is_the_json_line_crewd_and_the_children_read_and_parses_back(message, line):
    assert message.encode() == line
    assert parse(line) == message


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"not json",
        b"[15]",
        b'{"signal": "15"}',
        b'{"signal": true}',
        b'{"exit_code": 1.5}',
        b'{"learned": "not base64!"}',
        b'{"home": "/tmp/x"}',
        b'{"other": 1}',
    ],
)
def test_a_line_that_is_no_message_parses_as_none(line):
    assert parse(line) is None


def test_a_request_header_names_the_field_that_is_wrong():
    assert RunRequest.from_header({"env": {"A": "1"}, "cwd": "/w", "stdin": "{}"}) == RunRequest({"A": "1"}, "/w", "{}")
    with pytest.raises(ValueError, match='"env", an object of strings'):
        RunRequest.from_header({"env": {"A": 1}, "cwd": "/w", "stdin": "{}"})
    with pytest.raises(ValueError, match='"cwd" and "stdin", strings'):
        RunRequest.from_header({"env": {}, "cwd": None, "stdin": "{}"})
