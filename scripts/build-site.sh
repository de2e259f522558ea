#!/usr/bin/env bash
# Builds the static site into site/dist/: every demo for wasm32 (release), wasm-bindgen at the
# pinned version, wasm-opt from npm's binaryen, and the pages. Serve site/dist/ from any static
# host, or with scripts/serve.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

DEMOS=(waves)

ensure_rust_parts
ensure_wasm_bindgen
ensure_browser

out=site/dist
rm -rf "$out"
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
echo "== site built in $out/"
