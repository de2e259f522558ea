#!/usr/bin/env bash
# Fetches transformers.js (npm's @huggingface/transformers, Apache-2.0) and the ONNX Runtime Web
# build it loads (npm's onnxruntime-web, MIT) from the npm registry, checks both packages against
# the integrity pinned here, and puts the three files the attention page's comparison loads into
# DEST (default .cache/transformers-js): transformers.min.js (the library with ONNX Runtime's
# JavaScript bundled in), ort-wasm-simd-threaded.asyncify.{mjs,wasm} (its WebAssembly, with the
# WebGPU execution provider), transformers.js's licence and a NOTICE naming both packages. Does nothing when DEST already holds them.
#
# Not an npm dependency of the site: installing @huggingface/transformers would also install
# onnxruntime-node, whose install script downloads native binaries from outside the registry.
#   scripts/vendor-transformers.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.cache/transformers-js}
transformers=@huggingface/transformers@4.3.2
transformers_sha=sha512-V3+dqf3iWlRYJ9I9GreM3zGQd0lAXnnoPeddmkOQYWAEE4l/+Fi6p7tx/qVUJlKQgLXGim2W76rTOzz+eC0i7g==
# The exact build transformers.min.js was bundled against (its `env.versions.web`).
ort=onnxruntime-web@1.31.0-dev.20260914-8d85527a0
ort_sha=sha512-Iy7rtadoBgxS/LLvDr3QW38DB1PNXRnr0GJMcL0TAt7c9qjgVQl83UlGCVyeAnK2InpmW8Uc3PL8XIuqtDeF6g==
files=(transformers.min.js ort-wasm-simd-threaded.asyncify.mjs ort-wasm-simd-threaded.asyncify.wasm
  LICENSE-transformers.js NOTICE)

if [ -f "$dest/VERSIONS" ] && [ "$(cat "$dest/VERSIONS")" = "$transformers $ort" ]; then
  echo "vendor-transformers: $dest already holds $transformers and $ort"
  exit 0
fi
command -v npm >/dev/null || { echo "vendor-transformers: needs npm" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "vendor-transformers: downloading $transformers and $ort (about 30 MB)"
# npm pack checks each tarball against the registry's integrity; its JSON says which that was.
(cd "$tmp" && npm pack --json --loglevel=error "$transformers" "$ort") > "$tmp/packed.json"
node - "$tmp/packed.json" "$transformers_sha" "$ort_sha" <<'JS'
const [file, ...want] = process.argv.slice(2);
const packed = JSON.parse(require('fs').readFileSync(file, 'utf8'));
if (packed.length !== want.length) {
  console.error(`vendor-transformers: npm packed ${packed.length} packages, not ${want.length}`);
  process.exit(1);
}
packed.forEach((p, i) => {
  if (p.integrity !== want[i]) {
    console.error(`vendor-transformers: ${p.id} has integrity ${p.integrity}, not the pinned ${want[i]}`);
    process.exit(1);
  }
});
JS
mkdir -p "$tmp/t" "$tmp/o" "$tmp/out"
tar xzf "$tmp"/huggingface-transformers-*.tgz -C "$tmp/t"
tar xzf "$tmp"/onnxruntime-web-*.tgz -C "$tmp/o"
cp "$tmp/t/package/dist/transformers.min.js" "$tmp/out/"
cp "$tmp/o/package/dist/ort-wasm-simd-threaded.asyncify.mjs" "$tmp/o/package/dist/ort-wasm-simd-threaded.asyncify.wasm" "$tmp/out/"
cp "$tmp/t/package/LICENSE" "$tmp/out/LICENSE-transformers.js"
# onnxruntime-web ships no licence file; its package.json names MIT.
license() { node -p 'require(process.argv[1]).license' "$1/package/package.json"; }
cat > "$tmp/out/NOTICE" <<EOF
transformers.min.js: $transformers, $(license "$tmp/t") (LICENSE-transformers.js).
ort-wasm-simd-threaded.asyncify.*: $ort, $(license "$tmp/o"), Copyright (c) Microsoft Corporation.
EOF
for f in "${files[@]}"; do [ -s "$tmp/out/$f" ] || { echo "vendor-transformers: $f missing from the packages" >&2; exit 1; }; done
echo "$transformers $ort" > "$tmp/out/VERSIONS"
# Moved into place whole: a failed fetch leaves nothing half-written.
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/out" "$dest"
ls -l "$dest"
