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
cp site/src/* "$out/"
for demo in "${DEMOS[@]}"; do
  echo "== building $demo for the browser"
  cargo build --quiet --release --target wasm32-unknown-unknown -p "$demo"
  wasm-bindgen --target web --no-typescript --out-dir "$out/$demo" \
    "target/wasm32-unknown-unknown/release/$demo.wasm"
  site/node_modules/.bin/wasm-opt -O2 \
    --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
    "$out/$demo/${demo}_bg.wasm" -o "$out/$demo/${demo}_bg.wasm"
  echo "   $out/$demo/${demo}_bg.wasm: $(du -k "$out/$demo/${demo}_bg.wasm" | cut -f1) KiB"
done
# The fleet page's module: the campaign as a library (crate fleet-web), no window.
if wanted fleet; then
echo "== building the fleet campaign for the browser"
cargo build --quiet --release --target wasm32-unknown-unknown -p fleet-web
wasm-bindgen --target web --no-typescript --out-dir "$out/fleet" \
  target/wasm32-unknown-unknown/release/fleet_web.wasm
site/node_modules/.bin/wasm-opt -O2 \
  --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
  --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
  "$out/fleet/fleet_web_bg.wasm" -o "$out/fleet/fleet_web_bg.wasm"
echo "   $out/fleet/fleet_web_bg.wasm: $(du -k "$out/fleet/fleet_web_bg.wasm" | cut -f1) KiB"
fi
# The flash page's module: the crate's library (its wasm exports in demos/flash/src/web.rs); the
# native `flash` binary is not for the browser.
if wanted flash; then
echo "== building the flash page for the browser"
cargo build --quiet --release --target wasm32-unknown-unknown -p flash --lib
wasm-bindgen --target web --no-typescript --out-dir "$out/flash" \
  target/wasm32-unknown-unknown/release/flash.wasm
site/node_modules/.bin/wasm-opt -O2 \
  --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
  --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
  "$out/flash/flash_bg.wasm" -o "$out/flash/flash_bg.wasm"
echo "   $out/flash/flash_bg.wasm: $(du -k "$out/flash/flash_bg.wasm" | cut -f1) KiB"
fi
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
# The attention model, when scripts/fetch-model.sh has fetched it (the page falls back to
# built-in weights without it). models/index.json always lists what the site carries, so a page
# asks for the manifest rather than probing for a file that may 404 (a console error).
mkdir -p "$out/models"
rm -rf "$out/models/all-minilm-l6-v2"
carried=()
if [ -f models/all-minilm-l6-v2/model.safetensors ]; then
  mkdir -p "$out/models/all-minilm-l6-v2"
  cp models/all-minilm-l6-v2/{config.json,model.safetensors,vocab.txt} "$out/models/all-minilm-l6-v2/"
  carried+=(all-minilm-l6-v2)
  echo "   included the model: models/all-minilm-l6-v2"
fi
python3 -c 'import json, sys; print(json.dumps({"models": sys.argv[1:]}))' "${carried[@]}" \
  > "$out/models/index.json"
echo "== site built in $out/"
