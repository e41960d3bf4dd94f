#!/usr/bin/env bash
# Builds the Python test environment once and reuses it: runners/python/.venv-test (or $CREWD_PYTHON_TEST_VENV),
# rebuilt when requirements-test.txt or constraints-test.txt change. Prints the environment's python on stdout;
# pip's output goes to stderr. Each call also compiles the runner's package (only what changed since): a sandbox shows
# it read-only, and with PYTHONDONTWRITEBYTECODE set nothing writes its __pycache__, so every Python process of the
# tests (a run, a fork server, a check) would compile it again (about 40 ms of CPU each).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CREWD_PYTHON_TEST_VENV:-$root/.venv-test}"
base_python="${PYTHON:-python3}"
stamp="$venv/.crewd-requirements.sha256"
wanted="$(cat "$root/requirements-test.txt" "$root/constraints-test.txt" | sha256sum | cut -d' ' -f1)"

compile_runner() { "$venv/bin/python" -m compileall -q "$root/crewd_runner" >&2; }

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  compile_runner
  echo "$venv/bin/python"
  exit 0
fi

echo "building the Python test environment in $venv" >&2
rm -rf "$venv"
"$base_python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r "$root/requirements-test.txt" -c "$root/constraints-test.txt" >&2
echo "$wanted" >"$stamp"
compile_runner
echo "$venv/bin/python"
