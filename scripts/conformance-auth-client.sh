#!/usr/bin/env bash
# The client command for the MCP conformance suite's auth/* client scenarios:
#   conformance client --command "scripts/conformance-auth-client.sh" --scenario auth/metadata-default
# It is called with the scenario server's URL. It starts a tool-cli-daemon with that one server,
# signs in with `tool-cli auth login` (following the authorization URL as a browser would: the
# suite's authorization endpoint approves at once and redirects to our loopback listener), then
# lists and calls the server's tools through the daemon. Everything runs on loopback and stops on
# exit. TOOL_CLI_BIN_DIR selects the binaries (default: target/debug).
set -euo pipefail
url="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/conformance/lib.sh
source "$root/scripts/conformance/lib.sh"
conformance_client_workspace
# A scenario with a pre-registered client passes its credentials in MCP_CONFORMANCE_CONTEXT:
# they go in the config as oauth.clientId and oauth.clientSecret, the secret as ${VAR}.
client_id="$(python3 -c 'import json,os; print(json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}").get("client_id",""))')"
if [[ -n "$client_id" ]]; then
    CONFORMANCE_CLIENT_SECRET="$(python3 -c 'import json,os; print(json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"]).get("client_secret",""))')"
    export CONFORMANCE_CLIENT_SECRET
    printf '{"mcpServers": {"scenario": {"url": "%s", "oauth": {"clientId": "%s", "clientSecret": "${CONFORMANCE_CLIENT_SECRET}"}}}}\n' \
        "$url" "$client_id" > "$dir/servers.json"
elif [[ "${MCP_CONFORMANCE_SCENARIO:-}" == auth/basic-cimd ]]; then
    # The suite's authorization server expects this URL as the client's metadata document.
    printf '{"mcpServers": {"scenario": {"url": "%s", "oauth": {"clientMetadataUrl": "%s"}}}}\n' \
        "$url" "https://conformance-test.local/client-metadata.json" > "$dir/servers.json"
else
    printf '{"mcpServers": {"scenario": {"url": "%s"}}}\n' "$url" > "$dir/servers.json"
fi
chmod 600 "$dir/servers.json"
# Debug logging of our own crates, so the secret check at the end covers the most log lines.
conformance_client_start_daemon RUST_LOG="${RUST_LOG:-info,tool_cli_daemon=debug}"

# The sign-in: read the URL the CLI prints, follow it like a browser, deliver the redirect.
login() {
    rm -f "$dir/login.err"
    mkfifo "$dir/login.err"
    "$bin/tool-cli" auth login scenario --no-browser < /dev/null 2> "$dir/login.err" > "$dir/login.out" &
    local login_pid=$! authorization_url="" line redirect
    while IFS= read -r line; do
        echo "$line" >&2
        if [[ -z "$authorization_url" && "$line" =~ ^[[:space:]]+(http[^[:space:]]+) ]]; then
            authorization_url="${BASH_REMATCH[1]}"
            redirect="$(curl -s -o /dev/null -w '%{redirect_url}' "$authorization_url")"
            curl -s "$redirect" > /dev/null || true
        fi
    done < "$dir/login.err"
    wait "$login_pid"
    cat "$dir/login.out"
}
login

# Use the server through the daemon: list its tools and call the first one with no arguments.
# A call refused for scope (403 insufficient_scope) says to sign in again when that can help
# (the daemon then asks for the wider scope, and limits how often); do so once, as a user would.
"$bin/tool-cli" scenario --json > "$dir/tools.json"
tool="$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tools"]; print(t[0]["name"] if t else "")' "$dir/tools.json")"
if [[ -n "$tool" ]]; then
    if ! "$bin/tool-cli" scenario "$tool" '{}' 2> "$dir/call.err"; then
        cat "$dir/call.err" >&2
        if grep -q 'tool-cli auth login scenario' "$dir/call.err"; then
            login
            "$bin/tool-cli" scenario "$tool" '{}' || true
        fi
    fi
fi

# No secret in the daemon's log: the configured client secret, nor any token or code the flow saw.
if [[ -n "${CONFORMANCE_CLIENT_SECRET:-}" ]] && grep -qF "$CONFORMANCE_CLIENT_SECRET" "$dir/daemon.log"; then
    echo "conformance-auth-client: the client secret appears in the daemon log" >&2
    exit 1
fi
if grep -qE 'test-token|test-auth-code|access_token' "$dir/daemon.log"; then
    echo "conformance-auth-client: a token or code appears in the daemon log" >&2
    grep -E 'test-token|test-auth-code|access_token' "$dir/daemon.log" | head -3 >&2
    exit 1
fi
