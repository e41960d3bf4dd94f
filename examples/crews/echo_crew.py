#!/usr/bin/env python3
"""A crew in Python using only the standard library: it reverses and counts the words of its input.

It speaks the crewd runner protocol (docs/runner-protocol.md): one JSON object on standard input,
one JSON event per line on standard output, a `run.completed` result at the end. Deterministic.
"""

import json
import sys


def emit(event_type, data):
    # flush=True: standard output is a pipe, and events should arrive as they happen.
    print(json.dumps({"type": event_type, "data": data}), flush=True)


def main():
    message = json.load(sys.stdin)
    run_input = message.get("input") or {}
    thread = message.get("thread")
    text = str(run_input.get("text", "hello from python"))

    emit("task.started", {"task": "analyse", "agent": "Echo Agent"})
    words = text.split()
    emit("tool_use", {"agent": "Echo Agent", "tool": "word_counter", "input": {"text": text},
                      "output": {"words": len(words)}})
    emit("log", {"message": "counted %d words" % len(words)})
    emit("task.completed", {"task": "analyse", "agent": "Echo Agent"})
    print("python says hi on stderr", file=sys.stderr, flush=True)

    output = {"text": text, "reversed": " ".join(reversed(words)), "word_count": len(words)}
    result = {"output": output}
    if thread is not None:
        values = dict(thread.get("values") or {})
        values["texts"] = list(values.get("texts", [])) + [text]
        result["values"] = values
    emit("run.completed", result)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # report any failure through the protocol
        emit("run.failed", {"error": str(error)})
