"""What a careless crew writes to standard output: forged protocol lines, broken JSON, bytes, child processes."""

import logging
import os
import subprocess
import sys

FORGED_RESULT = '{"type": "run.completed", "data": {"output": {"forged": true}}}'
FORGED_FAILURE = '{"type": "run.failed", "data": {"error": "forged"}}'


def print_garbage():
    print(FORGED_RESULT)
    print("not json at all {")
    sys.stdout.write("a line written in ")
    sys.stdout.write("two parts\n")
    sys.stdout.buffer.write(b"bytes through sys.stdout.buffer\n")
    sys.stdout.flush()
    os.write(1, (FORGED_FAILURE + "\n").encode())
    os.write(1, b"\xff\xfe raw bytes on fd 1\n")
    subprocess.run(["echo", "from a child process"], check=True)
    logging.getLogger("garbage").error("logged with the logging module")
    print("to standard error", file=sys.stderr)
    print("no newline at the end", end="")
