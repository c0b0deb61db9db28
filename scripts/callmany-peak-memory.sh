#!/usr/bin/env bash
# The daemon's peak memory (VmHWM) around one crafted callMany: CALLS calls of the fault
# server's `huge` tool, each answering BYTES bytes (issue 22, item 3). Prints the request's and
# the answer's size, VmHWM before and after, and what the entries were (inline, spilled, or an
# error kind). Everything it writes is in a temp dir, removed at the end.
#
# usage: scripts/callmany-peak-memory.sh [CALLS [BYTES [CONCURRENCY]]]   (default 64 4000000 8)
# DAEMON and FAULT_SERVER name other binaries (default: target/debug, built by
# `cargo build --workspace --bins`); DAEMON is how a build before a change is compared.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
daemon_bin="${DAEMON:-$target/debug/tool-cli-daemon}"
fault_bin="${FAULT_SERVER:-$target/debug/tool-cli-fault-server}"
calls="${1:-64}" bytes="${2:-4000000}" concurrency="${3:-8}"

dir="$(mktemp -d)"
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -m 700 "$dir/run"
printf '{"mcpServers": {"big": {"command": "%s"}}}\n' "$fault_bin" > "$dir/servers.json"
HOME="$dir" XDG_RUNTIME_DIR="$dir/run" XDG_STATE_HOME="$dir/state" XDG_CONFIG_HOME="$dir/config" \
  XDG_CACHE_HOME="$dir/cache" "$daemon_bin" --config "$dir/servers.json" --print-env \
  > "$dir/env" 2> "$dir/log" &
pid=$!
for _ in $(seq 600); do
  grep -q TOOL_CLI_TOKEN "$dir/env" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/log" >&2; exit 1; }
  sleep 0.1
done
# shellcheck disable=SC1091
source "$dir/env"
before=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
python3 - "$calls" "$bytes" "$concurrency" > "$dir/body" <<'PY'
import json, sys
calls, size, concurrency = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "callMany", "params": {
    "maxConcurrent": concurrency,
    "calls": [{"server": "big", "tool": "huge", "arguments": {"bytes": size}}] * calls}}))
PY
status=$(curl -s -o "$dir/answer" -w '%{http_code}' -H "Authorization: Bearer $TOOL_CLI_TOKEN" \
  -H 'Content-Type: application/json' --data-binary @"$dir/body" "http://127.0.0.1:$TOOL_CLI_PORT/")
after=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
entries=$(python3 - "$dir/answer" <<'PY'
import json, sys
answer = json.load(open(sys.argv[1]))
if "error" in answer:
    print("error", answer["error"]["code"], answer["error"]["message"][:100])
    sys.exit()
kinds = {}
for entry in answer["result"]["results"]:
    if "result" in entry:
        meta = entry["result"].get("_meta", {})
        kind = "spilled" if "tool-cli/spilled" in meta else "inline"
    else:
        kind = entry["error"]["data"]["kind"]
    kinds[kind] = kinds.get(kind, 0) + 1
print(", ".join(f"{count} {kind}" for kind, count in kinds.items()))
PY
)
echo "callMany of ${calls} x ${bytes} B (request $(stat -c %s "$dir/body") B): HTTP ${status}," \
  "answer $(stat -c %s "$dir/answer") B; daemon VmHWM ${before} kB before, ${after} kB after;" \
  "entries: ${entries}"
