"""A tool-cli-daemon for a measurement script: started on a config in a work directory of its
own, on a port it picks, and stopped (with everything it started) when the block ends.

    from local_daemon import started_daemon

    with started_daemon(binary, config, work) as daemon:
        daemon.post("/", {"jsonrpc": "2.0", "id": 1, "method": "health"})

The daemon gets a fresh state and runtime directory under `work` (nothing of the user's is read
or written), logs at `warn`, and answers before its servers are connected (`--ready-when none`):
a script waits for what it measures itself. Its process group is sent SIGTERM at the end, so the
servers it started go with it. Shared by gateway-token-figures.py and bench-search-daemon.py.
"""
import contextlib
import json
import os
import signal
import subprocess
import urllib.request


class Daemon:
    """The running daemon: where it listens and its owner token."""

    def __init__(self, port, token):
        self.port = port
        self.token = token
        self.url = f"http://127.0.0.1:{port}/"

    def post(self, path, body, headers=None, timeout=60):
        """POSTs `body` as JSON to `path` with the token; returns the decoded answer and the
        response headers."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                     **(headers or {})})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read()), response.headers


def read_endpoint(lines):
    """The port and token of the daemon's `--print-env` lines (`export TOOL_CLI_PORT=…`)."""
    port = token = None
    for line in lines:
        if "TOOL_CLI_PORT=" in line:
            port = int(line.strip().split("=", 1)[1])
        if "TOOL_CLI_TOKEN=" in line:
            token = line.strip().split("=", 1)[1]
        if port and token:
            return port, token
    raise RuntimeError("the daemon exited before printing its port and token")


@contextlib.contextmanager
def started_daemon(binary, config, work):
    """Writes `config` to `work/servers.json`, starts `binary` on it and yields a `Daemon`."""
    config_path = os.path.join(work, "servers.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    environment = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"),
                       XDG_RUNTIME_DIR=os.path.join(work, "run"), RUST_LOG="warn")
    os.makedirs(environment["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    process = subprocess.Popen(
        [binary, "--config", config_path, "--port", "0", "--print-env", "--ready-when", "none"],
        stdout=subprocess.PIPE, env=environment, text=True, start_new_session=True)
    try:
        yield Daemon(*read_endpoint(process.stdout))
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
