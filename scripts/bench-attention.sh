#!/usr/bin/env bash
# Runs on the GPU machine over a release build made beforehand:
#   scripts/bench-attention.sh KILN_BIN OUT_DIR [TORCH_ANCHORS_PY]
# The attention shapes of the FlashAttention-2 issue — B1 H16 N4096 D64 and B8 H12 N1024 D64,
# forward and forward+backward, causal and not — through `kiln bench attention` (flash, naive
# GPU and CPU paths, each GPU result checked against the CPU reference on one batch × head
# slice first; a wrong path fails the run), then PyTorch SDPA in the same command when the
# anchors script is given. Prints one table; exits non-zero when a step fails.
set -uo pipefail
kiln=$1; out=$2; anchors=${3:-}
failed=0
mkdir -p "$out"

run() { "$kiln" bench attention --json --cpu-slices 1 --cpu-budget 1 --repeats 10 "$@" || failed=1; }
{
  for shape in "--b 1 --h 16 --n 4096 --d 64" "--b 8 --h 12 --n 1024 --d 64"; do
    # shellcheck disable=SC2086
    run $shape --sweep --backward
    # shellcheck disable=SC2086
    run $shape
    # shellcheck disable=SC2086
    run $shape --causal
    # shellcheck disable=SC2086
    run $shape --causal --backward
  done
  run --b 1 --h 16 --n 4096 --d 64 --dtype f16 --sweep --backward
} > "$out/attention.jsonl"

if [ -n "$anchors" ]; then
  python3 "$anchors" > "$out/anchors.jsonl" 2> "$out/anchors.err" || failed=1
fi

python3 - "$out/attention.jsonl" "$out/anchors.jsonl" <<'PY' | tee "$out/attention.txt"
import json, sys, os
text = open(sys.argv[1]).read()
dec, runs, i = json.JSONDecoder(), [], 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    obj, i = dec.raw_decode(text, i)
    runs.append(obj)
sdpa = {}
if os.path.exists(sys.argv[2]):
    for line in open(sys.argv[2]):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("what", "").startswith("sdpa") and "fwd_ms" in r:
            sdpa[r["what"]] = r
print(f"{'shape':<26}{'pass':<25}{'flash ms':>10}{'TFLOP/s':>9}{'naive ms':>10}{'cpu ms':>12}{'SDPA eff ms':>12}{'flash/SDPA':>11}  flash MB / naive MB")
for r in runs:
    s = r["shape"]
    p = {x["path"]: x for x in r["paths"]}
    name = f"B{s['b']} H{s['h']} N{s['n']} D{s['d']} {r['dtype']}"
    pas = r["pass"] + (" causal" if r["causal"] else "")
    key = f"sdpa efficient {r['dtype']} B{s['b']} H{s['h']} N{s['n']} D{s['d']} causal={r['causal']}"
    ref = sdpa.get(key, {}).get("fwdbwd_ms" if r["pass"] != "forward" else "fwd_ms")
    f = p["flash"]["timing"]["median_ms"]
    n = p.get("naive", {}).get("timing", {}).get("median_ms", float("nan"))
    c = p["cpu"]["timing"]["median_ms"]
    ratio = f"{f / ref:.2f}x" if ref else "—"
    refs = f"{ref:.3f}" if ref else "—"
    print(f"{name:<26}{pas:<25}{f:>10.3f}{p['flash']['timing']['tflops']:>9.2f}{n:>10.3f}{c:>12.0f}{refs:>12}{ratio:>11}  {p['flash']['mb_moved']:.0f} / {p.get('naive', {}).get('mb_moved', float('nan')):.0f}")
    for v in p["flash"]["variants"]:
        print(f"    {v['family']} {v['variant']}")
    best = {}
    for sw in r.get("sweep", []):
        if "median_ms" in sw and (sw["family"] not in best or sw["median_ms"] < best[sw["family"]]["median_ms"]):
            best[sw["family"]] = sw
        if sw.get("wrong"):
            print(f"    WRONG {sw['family']} {sw['variant']} rel L2 {sw['rel_l2_error']}")
    for fam, sw in best.items():
        print(f"    fastest {fam}: {sw['variant']} {sw['median_ms']:.3f} ms")
print("clock: GPU timestamps for Kiln (per pass over the dispatches), CUDA events for PyTorch; CPU: wall clock on one batch×head slice, scaled")
PY
exit $failed
