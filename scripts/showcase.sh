#!/usr/bin/env bash
# The showcase: installs what is missing, then shows Kiln on the adapter in hand (the software
# Vulkan adapter when there is no GPU) — its profile, the kernel variants rendered and validated
# for it, the selector's choices, and a GPU-vs-CPU matmul benchmark checked against the CPU path.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

ensure_lavapipe
cargo build --quiet --bin kiln
kiln=target/debug/kiln

echo "== the adapter"
"$kiln" info
echo
echo "== kernel variants for it"
"$kiln" kernels --explain | tail -n 12
echo
echo "== matmul 256³, f32: GPU against the plain CPU path"
"$kiln" bench matmul --m 256 --n 256 --k 256
if "$kiln" info --json | grep -q '"shader_f16": true'; then
  echo
  echo "== matmul 130×33×7, batch 3, f16 (a shape that is no tile multiple)"
  "$kiln" bench matmul --m 130 --n 33 --k 7 --batch 3 --dtype f16
fi
