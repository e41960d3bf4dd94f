"""A crew in standard-library Python that speaks crewd's runner protocol.

It reads the run request on standard input and prints one JSON event a line. In a thread, it
counts the runs so far in the thread's values.
"""

import json
import os
import platform
import sys
from collections import Counter


def emit(kind, data):
    sys.stdout.write(json.dumps({"type": kind, "data": data}) + "\n")
    sys.stdout.flush()


def main():
    request = json.loads(sys.stdin.read())
    text = str(request.get("input", {}).get("text", "the quick brown fox jumps over the lazy dog the end"))
    thread = request.get("thread") or {}
    values = thread.get("values") or {}

    emit("task.started", {"task": "count words", "agent": "counter"})
    words = Counter(word.strip(".,!?").lower() for word in text.split())
    top = [{"word": word, "count": count} for word, count in words.most_common(3)]
    emit("task.completed", {"task": "count words", "agent": "counter", "output": top})

    runs = int(values.get("runs", 0)) + 1
    emit(
        "run.completed",
        {
            "output": {
                "top_words": top,
                "python": platform.python_version(),
                "virtual_env": sys.prefix != sys.base_prefix,
                "greeting": os.environ.get("GREETING", "hello"),
            },
            "values": {"runs": runs},
        },
    )


if __name__ == "__main__":
    main()
