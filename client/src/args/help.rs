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

  Routed calls (the daemon picks the server among those offering the tool):
  tool-cli TOOL '{\"k\": \"v\"}'            two words, the second starting with `{`: a routed call
  tool-cli '*' TOOL ['{\"k\": \"v\"}']      the server `*`: a routed call (arguments default to {})
  Any other second word is a tool name, so `tool-cli SERVER TOOL` still describes, and a server
  named like a tool is reached with three words: `tool-cli SERVER TOOL '{...}'`. Where the call
  went (server, rule, rejected alternatives) is noted on stderr.

Call options (anywhere on the line):
  --session ID            attach the call to a session (default: $TOOL_CLI_SESSION)
  --dry-run               print the plan (server, rule, why, validation) without calling; exit 0
                          if the call would run, else the exit code the real call would get
  --hint TEXT             words for routing: a server or tag the call means, or its purpose
  --idempotency-key KEY   a repeat with the same KEY is answered from memory (10 minutes)
  --elicitation ask|decline
                          a question the server asks during the call: a form on stderr read
                          from stdin (default on terminals), or declined
Arguments as words instead of one JSON object (one form per call, each key once):
  key=value      a string, or a number/boolean/null when the tool's schema says so
                 (the schema is fetched only when a value could be either)
  key:=JSON      any JSON value: n:=3, ids:='[1, 2]', filter:='{\"a\": 1}'
  key=@FILE      the file's contents as a string (key:=@FILE: as JSON; key=\\@x: the text @x)
  --args-file F  the whole arguments object from a JSON file
  e.g. tool-cli demo sql_query sql='SELECT * FROM orders' page_size=5
  A key the schema does not know is refused with the closest name (\"did you mean\").

Output:
  --output text  the rendering below (the default)
  --output json  the method's raw JSON result (same as --json)
  --output raw   a call's content exactly, for pipes: text parts concatenated with nothing
                 added, or the decoded bytes of binary content (an image > file.png)

  A call prints the tool's structuredContent as JSON when it has one, else its text content;
  images, audio and embedded resources are shown as one-line placeholders; --out FILE writes
  the decoded bytes of a binary result, --json prints everything.

Resources:
  tool-cli resource list [--server S]       resources of S, or of every ready server
  tool-cli resource templates [--server S]  resource templates, likewise
  tool-cli resource read [--server S] URI [--out FILE | --meta | --json]
  The `resource` subcommand wins over a server named `resource`; reach such a server with
  `tool-cli -- resource [TOOL] [ARGS_JSON]`.

Prompts:
  tool-cli prompt list [--server S]         prompts of S, or of every server (* = required arg)
  tool-cli prompt get SERVER NAME [KEY=VALUE...] [--json]
                                            render a prompt and print its messages

Health:
  tool-cli health [--tools] [--json]    per server: state, restarts, uptime, calls/errors,
                                        in-flight/queued, p50/p95 latency, circuit breaker;
                                        --tools adds a row per tool called: calls, successes,
                                        p50/p95 latency, last use, its server's breaker
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

Sessions (a token's own; wins over a server named `session`):
  tool-cli session open [--task TEXT] [--label L]...
                                        prints only the id: SESSION=$(tool-cli session open ...)
  tool-cli session summary ID [--json]  calls, errors, success rate, latency, tokens, cost,
                                        tools used, routing rules fired (unknown id: exit 5)
  tool-cli session list                 this token's sessions, most recent first
  tool-cli session close ID             exit 5 when this token has no such session

The agent (wins over a server named `agent`):
  tool-cli agent \"TASK\" [--backend B] [--model M] [--max-steps N] [--max-cost USD]
                 [--dry-run] [--session ID] [--json]
                                        runs the daemon's agent on TASK: a progress line per
                                        step on stderr (tool, outcome, cost so far), the answer
                                        on stdout (--json: the whole result); Ctrl-C cancels the
                                        run and exits 130 once the daemon acknowledged it

Chains and fan-outs (each call through the daemon's whole pipeline; see docs/cli.md):
  tool-cli chain FILE|-                 run the steps of FILE (callChain's params, or an array of
                                        steps) in order; a step takes an earlier result's value
                                        with {\"$from\": \"0\", \"pointer\": \"/structuredContent/x\"}
                                        in its arguments; stops at the first failing step
  tool-cli many FILE|- [--max-concurrent N]
                                        run the calls of FILE at once and answer each
  tool-cli chain|many 'SERVER TOOL {json}'...
                                        the calls as quoted words instead of a file ('*' routes)
  Each call gets a header line and its result; failures go to stderr, naming the step, and the
  exit code is the first failure's. --json prints the daemon's whole answer; --dry-run plans
  every call; --session, --yes and --timeout apply to all of them.

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
  tool-cli record --server S --out FILE [--calls N | --for SECS]
                                        restart S under the recorder: every caller's calls to it
                                        go to FILE (NDJSON, secrets redacted) until Ctrl-C, N
                                        answered tool calls or SECS; then S runs unrecorded
                                        again; replay FILE with {\"replay\": FILE} in the config
  tool-cli record --server S --stop     end a recording whose `tool-cli record` is gone

Config import (no daemon needed; see docs/config-import.md):
  tool-cli config import --from CLIENT [--path FILE] [--config FILE] [--write]
                                        CLIENT: claude-desktop, claude-code, cursor, vscode,
                                        windsurf, codex; shows the servers found and what could
                                        not be translated; --write adds the new ones to
                                        tool-cli's config (conflicts reported, never overwritten)

Search (every server's tools the token can see, ranked by what they do):
  tool-cli search \"QUERY\" [--limit N] [--server S]... [--json]
                                        rank, server/tool, score and description, and how to
                                        call the best hit

Traces (the daemon appends a line per call to its traces.jsonl):
  tool-cli traces report [--since 24h] [--by day|server|tool|session] [--executed-only]
                         [--json | --markdown] [--file PATH]
                                        calls, errors, success rate, p50/p95 latency, tokens
                                        and cost per group; --file reads a trace file (and its
                                        rotated PATH.1, ...) itself, without a daemon

Shell completion (servers, tools and parameters live from the daemon; none without one):
  tool-cli completions bash > ~/.local/share/bash-completion/completions/tool-cli
  source <(tool-cli completions zsh)         (after compinit, e.g. in ~/.zshrc)
  tool-cli completions fish > ~/.config/fish/completions/tool-cli.fish

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
  TOOL_CLI_SESSION               the session every call and agent run is attached to, like
                                 --session
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
     tool needs --yes
  10 `tool-cli agent`: a guard halted the run (cost ceiling, step limit, loop, cancelled
     elsewhere) before a final answer; a run out of time exits 7, a failed run 1
  11 `tool-cli agent`: the agent could not do the task (status cannot) or refused it (status
     refused: a change to data the tools only read); the answer on stdout says why
  130 interrupted (Ctrl-C); `tool-cli agent` cancelled its run first";
