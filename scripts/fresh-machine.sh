#!/usr/bin/env bash
# What a new user does, on a machine where crewd never ran, from a checkout where `npm install` (or `npm ci`) ran:
# starts the service as the README says (`npm start`, the embedded database, the default RUNNER_SANDBOX), takes the
# admin key it prints at its first start, logs in and deploys every project under examples/ with `crewd deploy` as
# docs/deploying.md and each example's README say, runs each with `crewd run`, and the LangGraph example's interrupt
# and resume with `crewd threads` and `crewd run --thread` (docs/cli.md). Each run must give its expected output.
# Then every command of the docs runs as written (scripts/doc-commands.mjs), and the service's log must show no Python
# fork server or version server that failed to start.
#
# Its environment is the machine's own (PATH, locale, proxies, certificates, pip and uv settings), a new empty HOME and
# a new DATA_DIR; nothing else. Exits 1 naming each step that failed, with its output. Usage: scripts/fresh-machine.sh
set -uo pipefail
cd "$(dirname "$0")/.."

# Not under /tmp: a sandboxed runner or build gets a /tmp of its own, where a real user's home never lies.
FRESH="$(mktemp -d -p /var/tmp crewd-fresh-machine-XXXXXX)"
SERVICE_LOG="$FRESH/service.log"
SERVICE_PID=""
FAILED=()

stop_service() {
  if [ -n "$SERVICE_PID" ]; then
    kill -TERM -- "-$SERVICE_PID" 2>/dev/null
    wait "$SERVICE_PID" 2>/dev/null
  fi
}
trap 'stop_service; rm -rf "$FRESH"' EXIT

# The machine's environment as a new user's login would have it: nothing of the caller's crewd settings or home.
machine_env=(env -i "PATH=$PATH" "HOME=$FRESH/home" "LANG=${LANG:-C.UTF-8}")
while IFS='=' read -r name _; do
  if [[ "$name" =~ ^((https?|no|all)_proxy|(HTTPS?|NO|ALL)_PROXY|SSL_CERT_(FILE|DIR)|NODE_EXTRA_CA_CERTS|PIP_[A-Z_]+|UV_[A-Z_]+|TZ|LC_[A-Z]+|USER|LOGNAME)$ ]]; then
    machine_env+=("$name=${!name}")
  fi
done < <(env)
mkdir -p "$FRESH/home"

say() { printf '\n==== fresh machine: %s\n' "$*"; }

# step NAME COMMAND...: runs it in the new user's environment; its output is kept in $OUT (stdout) and shown on failure.
step() {
  local name="$1"; shift
  say "$name"
  local started=$SECONDS
  "${machine_env[@]}" "$@" >"$FRESH/out" 2>"$FRESH/err"
  local code=$?
  OUT="$(cat "$FRESH/out")"
  if [ "$code" -ne 0 ]; then
    cat "$FRESH/err" "$FRESH/out"
    echo "FAILED ($((SECONDS - started)) s, exit code $code): $name"
    FAILED+=("$name")
    return 1
  fi
  # The first lines say what was packed and how it installs (uv or pip), the last how it ended.
  if [ "$(wc -l <"$FRESH/err")" -gt 8 ]; then head -n 4 "$FRESH/err"; echo "  …"; tail -n 3 "$FRESH/err"; else cat "$FRESH/err"; fi
  echo "ok ($((SECONDS - started)) s)"
}

# expect NAME JS: the last step's standard output, as JSON `o`, must make the JavaScript expression JS true.
expect() {
  local name="$1" check="$2"
  if printf '%s' "$OUT" | node -e "const o = JSON.parse(require('fs').readFileSync(0, 'utf8')); process.exit(($check) ? 0 : 1)"; then
    echo "ok: $name"
  else
    echo "unexpected output, $name: wanted $check, got:"
    printf '%s\n' "$OUT"
    FAILED+=("$name")
    return 1
  fi
}

finish() {
  say "summary"
  if [ "${#FAILED[@]}" -eq 0 ]; then
    echo "every step passed"
    exit 0
  fi
  printf 'FAILED: %s\n' "${FAILED[@]}"
  echo "the service's log, last lines:"
  tail -n 40 "$SERVICE_LOG" 2>/dev/null
  exit 1
}

crewd() { step "crewd $*" npx crewd "$@"; }

if [ ! -d node_modules ]; then
  FAILED+=("no node_modules here: run npm install first (the README's first command)")
  finish
fi

PORT="$(node -e 'const s = require("net").createServer().listen(0, () => { console.log(s.address().port); s.close(); })')"
URL="http://localhost:$PORT"

say "npm start (DATA_DIR and PORT of its own; the README's first command)"
started=$SECONDS
setsid "${machine_env[@]}" "DATA_DIR=$FRESH/data" "PORT=$PORT" npm start >"$SERVICE_LOG" 2>&1 &
SERVICE_PID=$!
until curl -sf "$URL/healthz" >/dev/null; do
  if ! kill -0 "$SERVICE_PID" 2>/dev/null || [ $((SECONDS - started)) -gt 300 ]; then
    cat "$SERVICE_LOG"
    FAILED+=("npm start: $URL/healthz did not answer (the service exited, or did not listen within 300 s)")
    finish
  fi
  sleep 1
done
echo "ok ($((SECONDS - started)) s): $URL/healthz answers"
KEY="$(grep -oE '\bcrewd_[a-z0-9]{40}\b' "$SERVICE_LOG" | head -n 1)"
if [ -z "$KEY" ]; then
  cat "$SERVICE_LOG"
  FAILED+=("npm start: no admin API key printed at the first start")
  finish
fi

step "crewd login --url $URL --key <the printed key>" npx crewd login --url "$URL" --key "$KEY" || finish

# Each example as its README deploys it. examples/crews is no project: it holds the command crews of the README's
# quickstart and of the tests.
for folder in examples/*/; do
  case " crews node-crew python-stdlib crewai-research crewai-flow langgraph-agent " in
    *" $(basename "$folder") "*) ;;
    *) FAILED+=("${folder%/}: an example this script does not deploy yet (add it here)") ;;
  esac
done
deploy_example() {
  local folder="$1" deployment="$2"
  crewd deploy "examples/$folder" --deployment "$deployment" --environment production
}

if deploy_example node-crew node-crew; then
  crewd run node-crew --input '{"topic": "gardening"}' --follow &&
    expect "node-crew's report" 'o.report === "gardening needs a server; gardening keeps data at home."'
fi

if deploy_example python-stdlib word-counter; then
  crewd run word-counter --input '{"text": "to be or not to be"}' --follow &&
    expect "word-counter's words" 'o.virtual_env === true && JSON.stringify(o.top_words[0]) === "{\"word\":\"to\",\"count\":2}"'
fi

# The CrewAI examples' READMEs turn CrewAI's telemetry off before the first run: nothing leaves the machine.
crewai_offline() {
  crewd variables set "$1" CREWAI_DISABLE_TELEMETRY=true CREWAI_DISABLE_TRACKING=true CREWAI_TRACING_ENABLED=false \
    OTEL_SDK_DISABLED=true LITELLM_LOCAL_MODEL_COST_MAP=True
}

if deploy_example crewai-research research && crewai_offline research; then
  crewd run research --input '{"topic": "solar batteries"}' --follow &&
    expect "research's two tasks" 'o.tasks.length === 2 && o.raw.includes("solar batteries")'
fi

if deploy_example crewai-flow poems && crewai_offline poems; then
  crewd run poems --input '{"sentence_count": 2}' --follow &&
    expect "poems' poem" 'o.state.sentence_count === 2 && o.result === "CrewAI hands each agent a task and a name. The writer writes, and the flow keeps score."'
fi

if deploy_example langgraph-agent langgraph-agent && crewd threads create langgraph-agent; then
  THREAD="$(printf '%s' "$OUT" | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).thread_id')"
  crewd run langgraph-agent --thread "$THREAD" --input '{"question": "How many words are in this question?"}' --follow &&
    expect "langgraph-agent stops at its interrupt" 'o.interrupts[0].value.question === "Send this answer?"' &&
    crewd run langgraph-agent --thread "$THREAD" --command '{"resume": {"approved": true}}' --follow &&
    expect "langgraph-agent resumed" 'o.approved === true && o.answers === 1' &&
    crewd threads get "$THREAD" &&
    expect "langgraph-agent's thread is idle" 'o.status === "idle" && o.interrupts.length === 0'
fi

# Every shell block of the README, docs/ and the examples' READMEs, in reading order, with `crewd` on the PATH as
# `npm link` puts it (docs/cli.md), the key the service printed and the service's address (scripts/doc-commands.mjs).
mkdir -p "$FRESH/bin" && ln -s "$PWD/bin/crewd.mjs" "$FRESH/bin/crewd"
step "every command of the docs, as written" env "PATH=$FRESH/bin:$PATH" node scripts/doc-commands.mjs --url "$URL" --key "$KEY"

# Each Python version's fork server or version server started (by now, the examples' have long been tried): one that
# cannot start leaves every run of its version cold, a CrewAI crew's import of seconds in each, and says so in the log.
say "the Python examples' fork and version servers started (the service's log)"
if grep -E 'server of a Python (version|environment) (did not|could not) start|the (fork|environment) server failed' \
  "$SERVICE_LOG"; then
  FAILED+=("a Python version's fork server or version server did not start (the service's log, above)")
else
  echo "ok: none failed to start"
fi

finish
