#!/usr/bin/env bash
# The client command for the MCP conformance suite's core client scenarios (initialize,
# tools_call, elicitation-sep1034-client-defaults, sse-retry):
#   conformance client --command "scripts/conformance-client.sh" --scenario tools_call
# It is called with the scenario server's URL (the suite names the scenario in
# MCP_CONFORMANCE_SCENARIO). It starts a tool-cli-daemon whose pool holds that one server, so the
# daemon's pool is the MCP client under test, then uses the server through tool-cli as a user
# would: lists its tools and calls the one the scenario is about (answering a question the server
# asks with the form's defaults: Enter on every field). Everything runs on loopback and stops on
# exit. TOOL_CLI_BIN_DIR selects the binaries (default: target/debug).
set -euo pipefail
url="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/conformance/lib.sh
source "$root/scripts/conformance/lib.sh"
conformance_client_workspace
# Questions are relayed to the caller (the elicitation scenario answers with the defaults).
printf '{"mcpServers": {"scenario": {"url": "%s", "elicitation": "ask"}}}\n' "$url" > "$dir/servers.json"
chmod 600 "$dir/servers.json"
conformance_client_start_daemon

"$bin/tool-cli" scenario --json > "$dir/tools.json"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
    tools_call)
        "$bin/tool-cli" scenario add_numbers '{"a": 2, "b": 3}' ;;
    elicitation-sep1034-client-defaults)
        # "y" answers the question; each empty line takes a field's default.
        printf 'y\n\n\n\n\n\n' | "$bin/tool-cli" scenario test_client_elicitation_defaults '{}' \
            --elicitation ask ;;
    sse-retry)
        "$bin/tool-cli" scenario test_reconnection '{}' ;;
    *)
        # initialize: connecting and listing is the scenario.
        ;;
esac
