"""A loopback HTTP proxy between the MCP conformance suite and tool-cli's `/mcp` gateway, for
`scripts/conformance-server.sh`. Python standard library only.

The suite's server scenarios connect with no credentials and call the reference server's tools
and prompts by their bare names (`test_simple_text`). The gateway needs the daemon's bearer token
and, in pass-through mode, names every tool and prompt `server__name` (always, even with one
server; docs/gateway.md). So this proxy does exactly two things and says so:

- adds `Authorization: Bearer <token>` to each request (the token from the environment; it never
  leaves loopback and is never logged);
- renames between the two naming schemes for the one upstream server `--server`: a bare tool or
  prompt name in a request (`tools/call`, `prompts/get`, a `ref/prompt` of `completion/complete`)
  gets the `server__` prefix, and `tools/list` / `prompts/list` answers lose it.

Everything else passes unchanged, both ways, streamed: status, headers (`Mcp-Session-Id`,
`Content-Type`), SSE bodies event by event, `GET` and `DELETE`. `Host` and `Origin` naming the
proxy are rewritten to name the daemon (the gate checks both), and any other `Host` or `Origin`
(the suite's DNS-rebinding scenario sends `evil.example.com`) is passed as sent, so the gate's
refusal is what the suite sees.

    python3 gateway_proxy.py --daemon-port P --server NAME   (prints "listening PORT" on stdout)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def loopback(hostport: str) -> bool:
    host = hostport.rsplit(":", 1)[0] if not hostport.endswith("]") else hostport
    return host.lower() in LOOPBACK_NAMES


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--daemon-port", type=int, required=True)
    parser.add_argument("--server", required=True)
    options = parser.parse_args()
    token = os.environ["TOOL_CLI_TOKEN"]
    prefix = options.server + "__"
    daemon = f"127.0.0.1:{options.daemon_port}"

    def to_gateway(message: object) -> object:
        if not isinstance(message, dict):
            return message
        params = message.get("params")
        if not isinstance(params, dict):
            return message
        method = message.get("method")
        if method in ("tools/call", "prompts/get") and isinstance(params.get("name"), str):
            if not params["name"].startswith(prefix):
                params["name"] = prefix + params["name"]
        reference = params.get("ref")
        if method == "completion/complete" and isinstance(reference, dict):
            if reference.get("type") == "ref/prompt" and isinstance(reference.get("name"), str):
                reference["name"] = prefix + reference["name"]
        return message

    def from_gateway(message: object) -> object:
        result = message.get("result") if isinstance(message, dict) else None
        if isinstance(result, dict):
            for key in ("tools", "prompts"):
                for item in result.get(key) or []:
                    name = item.get("name") if isinstance(item, dict) else None
                    if isinstance(name, str) and name.startswith(prefix):
                        item["name"] = name[len(prefix) :]
        return message

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:
            self.relay()

        def do_POST(self) -> None:
            self.relay()

        def do_DELETE(self) -> None:
            self.relay()

        def relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if body and "json" in (self.headers.get("Content-Type") or ""):
                try:
                    body = json.dumps(to_gateway(json.loads(body))).encode()
                except ValueError:
                    pass
            headers = {}
            for name, value in self.headers.items():
                lower = name.lower()
                if lower in HOP_BY_HOP or lower == "authorization":
                    continue
                if lower == "host" and loopback(value):
                    value = daemon
                if lower == "origin":
                    scheme, _, rest = value.partition("://")
                    if loopback(rest):
                        value = f"{scheme}://{daemon}"
                headers[name] = value
            headers["Authorization"] = f"Bearer {token}"
            if body or self.command == "POST":
                headers["Content-Length"] = str(len(body))
            upstream = http.client.HTTPConnection("127.0.0.1", options.daemon_port, timeout=300)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                kind = answer.getheader("Content-Type") or ""
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                if "text/event-stream" in kind:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.stream_events(answer)
                else:
                    data = answer.read()
                    if "json" in kind and data:
                        try:
                            data = json.dumps(from_gateway(json.loads(data))).encode()
                        except ValueError:
                            pass
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
            except OSError:
                self.close_connection = True
            finally:
                upstream.close()

        def stream_events(self, answer: http.client.HTTPResponse) -> None:
            """Relays an SSE body one event at a time (each `data:` line renamed)."""
            try:
                while True:
                    line = answer.readline()
                    if not line:
                        break
                    if line.startswith(b"data:"):
                        payload = line[5:].strip()
                        try:
                            line = b"data: " + json.dumps(from_gateway(json.loads(payload))).encode() + b"\n"
                        except ValueError:
                            pass
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
