#!/usr/bin/env bash
# Builds the Python test environment once and reuses it: runners/python/.venv-test (or $CREWD_PYTHON_TEST_VENV),
# rebuilt when requirements-test.txt or constraints-test.txt change. Prints the environment's python on stdout;
# pip's output goes to stderr.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CREWD_PYTHON_TEST_VENV:-$root/.venv-test}"
base_python="${PYTHON:-python3}"
stamp="$venv/.crewd-requirements.sha256"
wanted="$(cat "$root/requirements-test.txt" "$root/constraints-test.txt" | sha256sum | cut -d' ' -f1)"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "$venv/bin/python"
  exit 0
fi

echo "building the Python test environment in $venv" >&2
rm -rf "$venv"
"$base_python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r "$root/requirements-test.txt" -c "$root/constraints-test.txt" >&2
echo "$wanted" >"$stamp"
echo "$venv/bin/python"
