"""A tiny client for the tool-cli daemon, with nothing but the Python standard library.

Copy this one file next to your script (or put examples/python on PYTHONPATH)::

    from tool_cli_client import Client, ToolCliError

    client = Client.from_env()
    page = client.call_tool("demo", "sql_query", {"sql": "SELECT 1 AS one"})
    print(page["structuredContent"]["rows"])

What it does, as docs/protocol.md specifies and `tool-cli` does:

* **Discovery**: TOOL_CLI_PORT + TOOL_CLI_TOKEN (and TOOL_CLI_HOST) from the environment, else
  TOOL_CLI_SOCKET + TOOL_CLI_TOKEN, else the runtime file ``daemon.json`` in
  $TOOL_CLI_RUNTIME_DIR, else $XDG_RUNTIME_DIR/tool-cli, else <tmp>/tool-cli-<uid>.
* **Identity before trust**: before the token is sent, the listener must prove it holds it
  (``POST /identity`` with a fresh nonce and the token's public id; the answer is
  HMAC-SHA256(token, "tool-cli-identity-v1\\n" + nonce + "\\n" + Host), compared in constant
  time). A stale port now held by another program never sees the token.
* **JSON-RPC 2.0** over HTTP/1.1 ``POST /`` with ``Authorization: Bearer``.
* **Errors as exceptions**: every failure is a :class:`ToolCliError` with ``code`` (the
  JSON-RPC code, or ``None`` for a failure on this side), ``kind`` (the daemon's ``data.kind``,
  e.g. ``unknownTool``, ``invalidArguments``, ``timeout``; or this module's own:
  ``noDaemon``, ``unreachable``, ``identityUnproven``, ``noIdentityProof``, ``unknownToken``,
  ``tokenRefused``, ``http``, ``protocol``) and ``data`` (the daemon's ``data`` object).

A tool that runs and fails is not an exception: ``call_tool`` returns its result with
``isError: true`` (see :func:`text_of`).
"""

import hashlib
import hmac
import http.client
import json
import os
import secrets
import socket
import tempfile

__all__ = ["Client", "ToolCliError", "text_of"]

IDENTITY_CONTEXT = "tool-cli-identity-v1"
DEFAULT_TIMEOUT_SECONDS = 60.0


class ToolCliError(Exception):
    """A failed request: ``code`` (JSON-RPC code or None), ``kind`` and ``data``."""

    def __init__(self, message, kind, code=None, data=None):
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.code = code
        self.data = data if data is not None else {}

    def __repr__(self):
        return f"ToolCliError(kind={self.kind!r}, code={self.code!r}, message={self.message!r})"


def text_of(result):
    """The text parts of a CallToolResult, joined with newlines."""
    return "\n".join(
        item.get("text", "") for item in result.get("content", []) if item.get("type") == "text"
    )


def token_id(token):
    """The token's public id: the first 8 bytes of SHA-256(token), as 16 hex characters."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def runtime_dir():
    """The directory of the daemon's runtime file, as the daemon and `tool-cli` choose it."""
    if os.environ.get("TOOL_CLI_RUNTIME_DIR"):
        return os.environ["TOOL_CLI_RUNTIME_DIR"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "tool-cli")
    return os.path.join(tempfile.gettempdir(), f"tool-cli-{os.getuid()}")


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over the daemon's Unix socket (a daemon started with --socket)."""

    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


class Client:
    """One daemon: its address, its token, and whether its identity was proven."""

    def __init__(self, token, host="127.0.0.1", port=None, socket_path=None,
                 timeout=DEFAULT_TIMEOUT_SECONDS, require_identity=True):
        if not token:
            raise ToolCliError("no token given; pass the daemon's token (TOOL_CLI_TOKEN)",
                               "noDaemon")
        if port is None and socket_path is None:
            raise ToolCliError("no port and no socket given; pass one of them", "noDaemon")
        self.host = host
        self.port = port
        self.socket_path = socket_path
        self.timeout = timeout
        self.require_identity = require_identity
        self._token = token
        self._proven = False
        self._next_id = 0

    @classmethod
    def from_env(cls, timeout=DEFAULT_TIMEOUT_SECONDS):
        """Finds the daemon as `tool-cli` does (see the module's documentation)."""
        env = os.environ
        require_identity = env.get("TOOL_CLI_REQUIRE_IDENTITY", "1") != "0"
        token = env.get("TOOL_CLI_TOKEN")
        host = env.get("TOOL_CLI_HOST", "127.0.0.1")
        if token and env.get("TOOL_CLI_PORT"):
            try:
                port = int(env["TOOL_CLI_PORT"])
            except ValueError:
                raise ToolCliError(
                    f"TOOL_CLI_PORT must be a port number, got {env['TOOL_CLI_PORT']!r}",
                    "noDaemon") from None
            return cls(token, host=host, port=port, timeout=timeout,
                       require_identity=require_identity)
        if token and env.get("TOOL_CLI_SOCKET"):
            return cls(token, socket_path=env["TOOL_CLI_SOCKET"], timeout=timeout,
                       require_identity=require_identity)
        path = os.path.join(runtime_dir(), "daemon.json")
        try:
            with open(path, encoding="utf-8") as file:
                runtime = json.load(file)
        except FileNotFoundError:
            raise ToolCliError(
                f"no tool-cli daemon found: TOOL_CLI_PORT/TOOL_CLI_TOKEN are unset and there is "
                f"no runtime file {path}; start one with `tool-cli daemon start`",
                "noDaemon") from None
        except (OSError, ValueError) as error:
            raise ToolCliError(f"cannot read the runtime file {path}: {error}",
                               "noDaemon") from None
        return cls(token or runtime["token"], host=runtime.get("host", host),
                   port=runtime.get("port") or None, socket_path=runtime.get("socket"),
                   timeout=timeout, require_identity=require_identity)

    # -- transport ------------------------------------------------------------------------------

    def address(self):
        """host:port, or the socket's path."""
        return self.socket_path or f"{self.host}:{self.port}"

    def _host_header(self):
        if self.socket_path:
            return "localhost"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def _post(self, path, headers, body):
        """One HTTP POST on a fresh connection: (status, body bytes)."""
        if self.socket_path:
            connection = _UnixConnection(self.socket_path, self.timeout)
        else:
            connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            connection.putrequest("POST", path, skip_host=True, skip_accept_encoding=True)
            connection.putheader("Host", self._host_header())
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, response.read()
        except socket.timeout:
            raise ToolCliError(f"no answer from the daemon at {self.address()} within "
                               f"{self.timeout} s", "timeout") from None
        except OSError as error:
            raise ToolCliError(
                f"cannot reach the tool-cli daemon at {self.address()} ({error}); is it "
                f"running? start one with `tool-cli daemon start`", "unreachable") from None
        finally:
            connection.close()

    def _prove_identity(self):
        """Checks that the listener holds the token before the token is sent."""
        nonce = secrets.token_hex(32)
        status, body = self._post("/identity", {"x-tool-cli-nonce": nonce,
                                                "x-tool-cli-token-id": token_id(self._token)}, b"")
        if status == 200:
            try:
                presented = json.loads(body)["proof"]
            except (ValueError, KeyError, TypeError):
                presented = ""
            message = f"{IDENTITY_CONTEXT}\n{nonce}\n{self._host_header()}".encode()
            expected = hmac.new(self._token.encode(), message, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(str(presented).lower(), expected):
                raise ToolCliError(
                    f"the listener at {self.address()} did not prove it holds the token, so "
                    f"the token was not sent (a stale TOOL_CLI_PORT, or another program there?)",
                    "identityUnproven")
        elif status == 403 and b"unknownTokenId" in body:
            raise ToolCliError(
                f"the daemon at {self.address()} knows no live token with this id (revoked, "
                f"expired, or another daemon's); the token was not sent", "unknownToken")
        elif status in (401, 404) and not self.require_identity:
            pass  # A tool-cli 1.x bridge, allowed by TOOL_CLI_REQUIRE_IDENTITY=0.
        elif status in (401, 404):
            raise ToolCliError(
                f"the listener at {self.address()} does not prove its identity (HTTP {status}; "
                f"a tool-cli 1.x bridge?), so the token was not sent; allow it with "
                f"TOOL_CLI_REQUIRE_IDENTITY=0 only if you trust it", "noIdentityProof",
                data={"status": status})
        else:
            raise ToolCliError(f"the identity check at {self.address()} answered HTTP "
                               f"{status}", "identityUnproven", data={"status": status})
        self._proven = True

    def call(self, method, params=None):
        """Any JSON-RPC method: its result, or a ToolCliError."""
        if not self._proven:
            self._prove_identity()
        self._next_id += 1
        request = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            request["params"] = params
        status, body = self._post("/", {"Authorization": f"Bearer {self._token}",
                                        "Content-Type": "application/json"},
                                  json.dumps(request).encode())
        if status in (401, 403):
            raise ToolCliError(f"the daemon refused the token (HTTP {status})", "tokenRefused",
                               data={"status": status})
        if status != 200:
            raise ToolCliError(f"the daemon answered HTTP {status}", "http",
                               data={"status": status})
        try:
            reply = json.loads(body)
        except ValueError:
            raise ToolCliError("the daemon's answer is not JSON", "protocol") from None
        if "error" in reply:
            error = reply["error"]
            data = error.get("data") if isinstance(error.get("data"), dict) else {}
            kind = data.get("kind") or {-32601: "methodNotFound",
                                        -32602: "invalidParams"}.get(error.get("code"), "rpcError")
            raise ToolCliError(f"{method} failed: {error.get('message')}", kind,
                               code=error.get("code"), data=data)
        if "result" not in reply:
            raise ToolCliError("the daemon's answer has neither result nor error", "protocol")
        return reply["result"]

    # -- methods --------------------------------------------------------------------------------

    def bridge_info(self):
        """getBridgeInfo, refusing anything but tool-cli-bridge major version 1."""
        info = self.call("getBridgeInfo")
        protocol = info.get("bridgeProtocol", {})
        if protocol.get("name") != "tool-cli-bridge" or protocol.get("major") != 1:
            raise ToolCliError(f"not a tool-cli bridge of major version 1: {protocol}",
                               "incompatibleBridge")
        return info

    def list_servers(self):
        """The servers: a list of {name, state, toolCount, examples, ...}."""
        return self.call("listServers")["servers"]

    def list_tools(self, server):
        """One server's tools: a list of {name, description, ...}."""
        return self.call("listTools", {"server": server})["tools"]

    def describe_tool(self, server, tool):
        """The tool as its server listed it, inputSchema included."""
        return self.call("describeTool", {"server": server, "tool": tool})

    def call_tool(self, server, tool, arguments=None, timeout_ms=None, confirm=False,
                  session_id=None):
        """Runs the tool: its whole CallToolResult (isError: true when the tool failed)."""
        params = {"server": server, "tool": tool, "arguments": arguments or {}}
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        if confirm:
            params["confirm"] = True
        if session_id is not None:
            params["sessionId"] = session_id
        return self.call("callTool", params)

    def search_tools(self, query, limit=None, servers=None):
        """Tools ranked for a query in words: a list of {server, tool, description, score}."""
        params = {"query": query}
        if limit is not None:
            params["limit"] = limit
        if servers is not None:
            params["servers"] = servers
        return self.call("searchTools", params)["results"]

    def run_agent(self, task, **options):
        """runAgent: the task run to its end; options are runAgent's other members, e.g.
        backend="offline", maxSteps=8, servers=["demo"]."""
        return self.call("runAgent", dict(options, task=task))
