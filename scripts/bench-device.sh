#!/usr/bin/env bash
# Runs on the GPU machine over binaries built beforehand (no Rust toolchain there):
#   scripts/bench-device.sh KILN_BIN [GPU_TEST_BIN] OUT_DIR
# Records the adapter profile, compiles every variant on the device, runs the GPU test suite,
# sweeps the matmul variants and sizes (each result compared with the CPU reference; `kiln
# bench` fails a variant over tolerance) and prints one table. Exits non-zero when a step fails.
set -uo pipefail
kiln=$1; tests=${2:-}; out=${3:-.}
failed=0
mkdir -p "$out"

"$kiln" info | tee "$out/info.txt"
"$kiln" info --json > "$out/profile.json"
"$kiln" kernels --compile > "$out/kernels.txt" 2>&1; tail -n 1 "$out/kernels.txt"

if [ -n "$tests" ]; then
  "$tests" > "$out/gpu-tests.txt" 2>&1 || failed=1
  tail -n 15 "$out/gpu-tests.txt"
fi

bench() { "$kiln" bench matmul --json "$@" || failed=1; }
{
  # Every f32 and f16 variant at 1024³: what the tuned table should learn from.
  for dtype in f32 f16; do
    for v in $("$kiln" kernels --family matmul --json | python3 -c \
        "import json,sys; print(' '.join(x['variant'] for x in json.load(sys.stdin)['variants'] if x['valid'] and x['variant'].startswith('$dtype')))"); do
      bench --m 1024 --n 1024 --k 1024 --dtype "$dtype" --variant "$v" --repeats 10 --cpu-budget 0.5
    done
  done
  # The selector's choice over sizes.
  for s in 256 1024 2048 4096; do
    for dtype in f32 f16; do
      bench --m $s --n $s --k $s --dtype $dtype --repeats 20 --cpu-budget 20
    done
  done
  # The waves frame: [4·1024, 256] · [256, 1024] as one batch-4 product.
  bench --batch 4 --m 1024 --n 1024 --k 256 --repeats 20
} > "$out/matmul.jsonl"

python3 - "$out/matmul.jsonl" <<'PY' | tee "$out/matmul.txt"
import json, sys
text = open(sys.argv[1]).read()
dec, i, rows = json.JSONDecoder(), 0, []
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    obj, i = dec.raw_decode(text, i)
    rows.append(obj)
for r in rows:
    s, g, c = r["shape"], r["gpu"], r["cpu"]
    print(f"{r['dtype']} b{s['batch']} {s['m']}x{s['n']}x{s['k']:<5} {r['variant']:<17} "
          f"gpu {g['median_ms']:9.4f} ms {g['gflops'] / 1e3:6.2f} TFLOP/s ({g['clock']})  "
          f"cpu {c['median_ms']:9.1f} ms  x{r['speedup_gpu_over_cpu']:7.0f}  err {r['rel_l2_error']:.1e}")
PY
exit "$failed"
