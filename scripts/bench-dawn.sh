#!/usr/bin/env bash
# Times the site's pages under Dawn, Chrome's WebGPU implementation, on the GPU machine, beside
# the same demos' native binaries (wgpu on Vulkan) in the same command: the page's own benchmark
# (site/tests/measure-dawn.mjs runs the built site's wasm module under npm's `webgpu` package,
# dawn.node) and the binary's `--bench` on the same work. Each side warms the GPU up before it
# times (kiln::bench::warm_up), and each reports its medians, its clock and its CPU path.
#   scripts/bench-dawn.sh NODE WEBGPU_PACKAGE SITE_DIR BIN_DIR OUT [MODEL_DIR]
# NODE: a Node 20 binary; WEBGPU_PACKAGE: the `webgpu` package's index.js; SITE_DIR: a site
# built by scripts/build-site.sh (its waves, attention and flash folders are enough); BIN_DIR:
# release builds of the attention, flash and waves binaries. On the GPU machine both Node (the
# binary alone runs there) and the package travel with the call, and libvulkan1 and the glvnd
# libraries are unpacked first, as for the native runs (without glvnd Dawn's submit aborts).
# DAWN_FLAGS passes Dawn toggles (`disable-dawn-features=timestamp_quantization` for exact
# timestamps; Chrome rounds them to 65.536 µs). STAGES picks the parts:
#   pages  waves (1024², 128 waves), the attention demo on its built-in weights, the flash page's
#          Medium training and a generation after it, and its kernel sweep;
#   minilm the attention demo on MODEL_DIR (MiniLM) at 17 and 212 tokens;
#   compare the attention page's comparison with transformers.js at 17 and 212 tokens: Kiln's GPU
#          path on MODEL_DIR and transformers.js's WebGPU pipeline on the site's ONNX export
#          (SITE_DIR/models/all-minilm-l6-v2: its onnx/, config and tokenizer files; and
#          SITE_DIR/vendor/transformers), on one Dawn device, after the page's own benchmark.
# Writes OUT/dawn.jsonl (one page report per line) and OUT/native.json (the binaries' JSON
# reports, one after another). Exits non-zero when a step fails.
set -uo pipefail
node=$1 pkg=$2 site=$3 bin=$4 out=$5 model=${6:-}
stages=${STAGES:-pages minilm compare}
here=$(cd "$(dirname "$0")" && pwd)
measure="$here/../site/tests/measure-dawn.mjs"
failed=0
mkdir -p "$out"
stage() { [[ " $stages " == *" $1 "* ]]; }
dawn() { "$node" "$measure" "$pkg" "$site" "$@" >> "$out/dawn.jsonl" 2>> "$out/dawn.err" || { failed=1; echo "FAILED: dawn $1 $2"; }; }
native() { "$bin/$1" "${@:2}" >> "$out/native.json" 2>> "$out/native.err" || { failed=1; echo "FAILED: native $*"; }; }
# The texts bench-gpu.sh's models stage times: 17 and 212 tokens, and the built-in demo's.
short="The quick brown fox jumps over the lazy dog near the river bank today."
long=$(python3 -c 'print(("Kernels are the implementations that run an operator on specific hardware, and the fastest one differs from device to device, so templates are rendered for the adapter in hand. ") * 6)')
builtin="The cat sat on the mat because it was tired, and the dog that had chased it all morning lay down by the door, waiting for the rain to stop so they could both go out again."
query() { python3 -c 'import sys, urllib.parse; print(sys.argv[1] + urllib.parse.quote(sys.argv[2]))' "$1" "$2"; }

if stage pages; then
  native waves --bench --json --frames 60
  dawn waves 'bench&json&frames=60'
  native attention --bench --json --frames 30 --model synthetic --text "$builtin"
  dawn attention "$(query 'bench&json&frames=30&model=synthetic&text=' "$builtin")"
  native flash --bench --json --preset medium --steps 20 --no-sweep --each-call --threads 1
  dawn flash 'train&preset=medium&steps=20&generate=64&prompt=the '
  dawn flash 'sweep'
fi
if stage minilm; then
  [ -n "$model" ] || { echo "bench-dawn: the minilm stage needs MODEL_DIR" >&2; exit 2; }
  for text in "$short" "$long"; do
    native attention --bench --json --frames 30 --model "$model" --text "$text"
    dawn attention "$(query 'bench&json&frames=30&text=' "$text")" "$model"
  done
fi
if stage compare; then
  [ -n "$model" ] || { echo "bench-dawn: the compare stage needs MODEL_DIR" >&2; exit 2; }
  for text in "$short" "$long"; do
    dawn attention "$(query 'bench&json&frames=10&compare&compare-runs=50&compare-warm=10&compare-text=' "$text")" "$model"
  done
fi
exit $failed
