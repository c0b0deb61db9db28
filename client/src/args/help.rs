//! The long help of `tool-cli --help`: the grammar by example, the environment and the exit
//! codes. Kept apart from the grammar because it is prose, and long.

pub(super) const AFTER_HELP: &str = "\
Progressive discovery (each step adds one word):
  tool-cli                              list servers: state, tool count, examples
  tool-cli SERVER                       list the server's tools, one line each
  tool-cli SERVER TOOL                  show the tool's parameters and a usage example
  tool-cli SERVER TOOL '{\"k\": \"v\"}'     call the tool with these JSON arguments
  tool-cli SERVER TOOL -                call it with the JSON arguments read from stdin
  tool-cli SERVER --help                the server's tools (SERVER TOOL --help: the tool's schema)

  A call prints the tool's structuredContent as JSON when it has one, else its text content;
  images, audio and embedded resources are shown as one-line placeholders; --out FILE writes
  the decoded bytes of a binary result, --json prints everything.

Resources:
  tool-cli resource list [--server S]       resources of S, or of every ready server
  tool-cli resource templates [--server S]  resource templates, likewise
  tool-cli resource read [--server S] URI [--out FILE | --meta | --json]
  The `resource` subcommand wins over a server named `resource`; reach such a server with
  `tool-cli -- resource [TOOL] [ARGS_JSON]`.

Health:
  tool-cli health [--json]              per server: state, restarts, uptime, calls/errors,
                                        in-flight/queued, p50/p95 latency, circuit breaker
  health exits 1 when any server is unhealthy, so scripts can check it: every enabled server
  must be ready (disabled ones don't count). Like `resource`, the subcommand wins over a server
  named `health`; reach such a server with `tool-cli -- health [TOOL] [ARGS_JSON]`.

Destructive tools:
  tool-cli SERVER TOOL ARGS_JSON --yes  a tool marked destructive runs only with --yes
                                        (without it: exit 9, nothing is run)

The daemon (the one of the runtime file; wins over a server named `daemon`):
  tool-cli daemon start [--config PATH] [-- DAEMON_ARGS]
                                        start tool-cli-daemon in the background, wait until its
                                        servers settled; log: daemon.log in the runtime directory
  tool-cli daemon status [--json]       pid, address, uptime, servers (exit 3: none runs)
  tool-cli daemon stop                  SIGTERM, then wait until it has exited

Tokens (with the daemon's own token; hand a minted one to a sub-agent as TOOL_CLI_TOKEN):
  tool-cli token mint [--server GLOB]... [--tool SERVER/TOOL_GLOB]... [--read-only]
                      [--ttl SECONDS] [--label TEXT]
                                        prints only the new token on stdout, a summary on
                                        stderr: TOKEN=$(tool-cli token mint --server demo)
  tool-cli token list [--json]          live minted tokens: id, label, expiry, scope
  tool-cli token revoke TOKEN_ID        exit 1 when no live token has that id
  The subcommand wins over a server named `token`; reach it with `tool-cli -- token ...`.
  tool-cli token mint --resource SERVER/URI_GLOB   grant resources too: a minted token sees none
                                        unless granted, e.g. --resource 'fs/file:///srv/*'

Servers (with the daemon's own token):
  tool-cli server restart NAME          start NAME again now (even one parked `down`) and clear
                                        its circuit breakers; exit 1 unless it comes back ready
  tool-cli server add NAME [--env K=V]... -- COMMAND ARGS...
  tool-cli server add NAME --url URL [--header 'NAME: VALUE']...
                                        start a new server in the running daemon (not saved to
                                        the config file); refused if it does not start
  tool-cli server remove NAME           let its calls in flight finish, then stop it
  tool-cli server list                  the servers (as `tool-cli` alone)
  tool-cli server reload                read the config file again (as SIGHUP): unchanged servers
                                        keep running, changed ones restart, removed ones drain

Config import (no daemon needed; see docs/config-import.md):
  tool-cli config import --from CLIENT [--path FILE] [--config FILE] [--write]
                                        CLIENT: claude-desktop, claude-code, cursor, vscode,
                                        windsurf, codex; shows the servers found and what could
                                        not be translated; --write adds the new ones to
                                        tool-cli's config (conflicts reported, never overwritten)

Traces (the daemon appends a line per call to its traces.jsonl):
  tool-cli traces report [--since 24h] [--by day|server|tool|session] [--executed-only]
                         [--json | --markdown] [--file PATH]
                                        calls, errors, success rate, p50/p95 latency, tokens
                                        and cost per group; --file reads a trace file (and its
                                        rotated PATH.1, ...) itself, without a daemon

Environment:
  TOOL_CLI_PORT, TOOL_CLI_TOKEN  the daemon's port and bearer token; when unset they are read
                                 from the daemon's runtime file (daemon.json); with a token but
                                 no port and no runtime file, port 7179 is tried
  TOOL_CLI_HOST                  address of the daemon (default 127.0.0.1)
  TOOL_CLI_SOCKET                the daemon's Unix socket, used instead of TCP; a runtime file
                                 naming a socket is used too, unless TOOL_CLI_PORT is set
  TOOL_CLI_TIMEOUT_MS            request timeout, like --timeout (at most 300000); without it a
                                 call is bounded by its server's configured timeoutMs and other
                                 requests by 30000
  TOOL_CLI_RUNTIME_DIR           directory of the runtime file (default $XDG_RUNTIME_DIR/tool-cli)
  TOOL_CLI_REQUIRE_IDENTITY=0    like --no-identity: also send the token to a bridge that does
                                 not prove it holds it (a tool-cli 1.x bridge); only for an
                                 address you trust
  Start a daemon with: tool-cli daemon start (or eval \"$(tool-cli-daemon --print-env &)\")

  With --json, a failure also prints {\"error\": {code, exitCode, kind, message, data}} on stderr.

Exit codes:
  0  success
  1  other error (including errors of the MCP server itself), an unhealthy server in
     `tool-cli health`, or a server that is busy or whose circuit breaker is open (both
     transient: the message says when to retry)
  2  usage error: bad command line or arguments that are not a JSON object
  3  cannot reach the daemon (no port or token found, connection refused, connect timeout,
     connection closed during the identity check: retry), or `daemon status` finds none
  4  the daemon does not know the token (revoked, expired, another daemon's) or refused it
  5  invalid params: unknown server or tool, arguments that fail the tool's input schema
  6  the tool ran and reported an error (isError: true)
  7  timed out (no answer within --timeout, or the daemon's call timeout)
  8  the listener did not prove it holds the token, so the token was not sent (a stale
     TOOL_CLI_PORT or TOOL_CLI_SOCKET, another program there, or a 1.x bridge without
     --no-identity)
  9  not permitted: the token's scope or the daemon's policy forbids it, or a destructive
     tool needs --yes";
