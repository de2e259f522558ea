#!/usr/bin/env bash
# Runs on the GPU machine over binaries built beforehand (no Rust toolchain there):
#   scripts/bench-gpu.sh KILN_BIN OUT_DIR [TORCH_ANCHORS_PY] [GPU_TEST_BIN...]
# In one command: the adapter profile; every variant compiled by the driver; the GPU test
# binaries given (kernels/tests/every_variant.rs among them: every offered variant against the
# CPU reference on its proof cases); the matmul shapes (1024³, 4096³,
# 8192³ in f32 and f16, the waves frame), each timed for the selector's choice and the candidate
# variants and checked against the CPU reference on sampled rows before its time counts; the
# attention shapes (B1 H16 N4096 D64, B8 H12 N1024 D64; causal or not; forward and forward +
# backward; f32 and f16), each checked against the CPU reference on one slice; PyTorch's cuBLAS
# and SDPA in the same command; then one table (scripts/lib/gpu_table.py) in OUT_DIR/table.md.
# STAGES="check matmul attention models sass" (the default) picks the parts (check: compile
# and tests, which may also be asked for alone: on the H200 the two took more than one 600 s
# command, kernels/perf/bench-gpu-release.md; sass: the driver's code for the picks, registers and
# instruction mix). The models stage times whole models beside PyTorch in the same command: the
# attention demo's forward pass on MiniLM-L6 (MODEL_DIR, f16 safetensors; scripts/model-f16.py) at
# about 17 and 212 tokens and on the built-in weights, next to Hugging Face transformers eager
# (scripts/hf-encoder-time.py); the flash demo's Medium training step next to the same model
# in PyTorch eager (scripts/flash-torch-step.py) and the Mega step; PyTorch's CUDA-graph replay
# of MiniLM and of both steps (scripts/torch-graph-anchors.py); the waves frame. BIN_DIR holds the attention,
# flash and waves binaries (default: KILN_BIN's folder).
# The decode stage (not in the default STAGES) times flash-decoding (`kiln bench decode`: one
# new row per sequence against a cache of 1k to 128k keys, Hq 32 over Hkv 8 at D 128, and Hq 16
# over 16 at D 64; B 1 and 8; f16 and f32) beside PyTorch's SDPA decode and the copy rate
# (scripts/torch-decode-anchors.py) in the same command.
# The generate stage (not in the default STAGES) times grouped-query attention against plain
# and the flash demo's generation on both paths (`flash sample`).
# The products stage (not in the default STAGES) times the f32 products of the flash demo's Mega
# training step at their own shapes and layouts (A·B forward, Aᵀ·B and A·Bᵀ backward): the
# ops' own plan, every offered variant whole and with K cut in 2, 4 and 8, beside cuBLAS at the
# same shapes (scripts/torch-product-anchors.py) in the same command.
# SWEEP=1 also times every offered flash variant per attention shape (for the tuned table).
# Exits non-zero when a step fails.
set -uo pipefail
kiln=$1; out=$2; anchors=${3:-}
shift $(( $# < 3 ? $# : 3 ))
stages=${STAGES:-check matmul attention models sass}
sweep=${SWEEP:+--sweep}
here=$(cd "$(dirname "$0")" && pwd)
failed=0
mkdir -p "$out"

"$kiln" info | tee "$out/info.txt"
"$kiln" info --json > "$out/profile.json"
stage() { [[ " $stages " == *" $1 "* ]]; }
if stage check || stage compile; then
  SECONDS=0
  "$kiln" kernels --compile > "$out/kernels.txt" 2>&1 || failed=1
  echo "$(tail -n 1 "$out/kernels.txt") ($SECONDS s)"
fi
if stage check || stage tests; then
  for t in "$@"; do
    SECONDS=0
    "$t" > "$out/tests-$(basename "$t").txt" 2>&1 || { failed=1; echo "FAILED: $t"; }
    grep -E "^test result|FAILED|panicked|offered variants of .* proven on" "$out/tests-$(basename "$t").txt" | head -n 12
    echo "$(basename "$t"): $SECONDS s"
  done
fi

# Candidates for the large shapes: the vec4 and coop routes, and the tiled route's register
# blocks of 4 × 4 and up (smaller blocks measured 2–5× slower on this GPU,
# kernels/perf/matmul-on-h200.md).
candidates() {
  "$kiln" kernels --family matmul --json | python3 -c "
import json, sys
vs = [v for v in json.load(sys.stdin)['variants'] if v['valid'] and v['variant'].startswith('$1')
      and v['values']['epilogue'] == 'none']
keep = [v['variant'] for v in vs if '_vec4' in v['variant'] or '_coop' in v['variant']
        or '_r4_' in v['variant'] or '_r8_' in v['variant']]
print(','.join(keep))"
}

if stage matmul; then
  mm() { "$kiln" bench matmul --json --cpu-budget 2 "$@" || failed=1; }
  {
    for dtype in f32 f16; do
      vs=$(candidates "$dtype")
      mm --m 1024 --n 1024 --k 1024 --dtype "$dtype" --variant "$vs" --repeats 20 --cpu-rows 64
      mm --m 4096 --n 4096 --k 4096 --dtype "$dtype" --variant "$vs" --repeats 10 --cpu-rows 16
      mm --m 8192 --n 8192 --k 8192 --dtype "$dtype" --variant "$vs" --repeats 5 --warmup 2 --cpu-rows 8
    done
    # The waves frame: [4·1024, 256] · [256, 1024] as one batch-4 product.
    mm --batch 4 --m 1024 --n 1024 --k 256 --variant "$(candidates f32)" --repeats 20 --cpu-rows 64
    # A · Bᵀ, as attention and training use it.
    mm --m 4096 --n 4096 --k 4096 --bt --variant "$(candidates f32)" --repeats 10 --cpu-rows 16
  } > "$out/matmul.jsonl"
fi

if stage attention; then
  at() { "$kiln" bench attention --json --cpu-slices 1 --cpu-budget 1 --repeats 10 "$@" || failed=1; }
  {
    for dtype in f32 f16; do
      for shape in "--b 1 --h 16 --n 4096 --d 64" "--b 8 --h 12 --n 1024 --d 64"; do
        for causal in "" "--causal"; do
          # shellcheck disable=SC2086
          at $shape --dtype $dtype $causal $sweep
          # shellcheck disable=SC2086
          at $shape --dtype $dtype $causal --backward --no-naive $sweep
        done
      done
    done
  } > "$out/attention.jsonl"
fi

if stage models; then
  bin=${BIN_DIR:-$(dirname "$kiln")}
  model=${MODEL_DIR:-models/all-minilm-l6-v2-f16}
  short="The quick brown fox jumps over the lazy dog near the river bank today."
  long=$(python3 -c 'print(("Kernels are the implementations that run an operator on specific hardware, and the fastest one differs from device to device, so templates are rendered for the adapter in hand. ") * 6)')
  builtin="The cat sat on the mat because it was tired, and the dog that had chased it all morning lay down by the door, waiting for the rain to stop so they could both go out again."
  {
    for dtype in f32 f16; do
      for text in "$short" "$long"; do
        "$bin/attention" --bench --json --frames 30 --model "$model" --dtype $dtype --text "$text" 2>>"$out/models.err" || failed=1
      done
    done
    "$bin/attention" --bench --json --frames 30 --model synthetic --text "$builtin" 2>>"$out/models.err" || failed=1
    "$bin/flash" --bench --json --preset medium --steps 40 --no-sweep --each-call --threads "$(nproc)" 2>>"$out/models.err" || failed=1
    "$bin/flash" --bench --json --preset mega --steps 10 --no-sweep --each-call --threads "$(nproc)" 2>>"$out/models.err" || failed=1
    "$bin/waves" --bench --json --frames 200 2>>"$out/models.err" || failed=1
  } > "$out/models.jsonl"
  {
    python3 "$here/hf-encoder-time.py" "$model" "$short" "$long" || failed=1
    python3 "$here/flash-torch-step.py" --preset medium --steps 50 || failed=1
    # PyTorch's best practice for fixed shapes: MiniLM and the Medium and Mega steps captured
    # in a CUDA graph and replayed, beside eager with fused AdamW.
    python3 "$here/torch-graph-anchors.py" "$model" --train || failed=1
  } > "$out/models-torch.jsonl" 2> "$out/models-torch.err"
fi

if stage products; then
  # Mega: rows 2048 (4 × 512), d_model 512, Q/K/V 1536, MLP 2048; M,N,K,layout as the step runs.
  shapes="2048,1536,512,nn 2048,512,512,nn 2048,2048,512,nn 2048,512,2048,nn
    2048,512,2048,tn 512,2048,2048,tn 512,512,2048,tn 512,1536,2048,tn
    2048,2048,512,nt 2048,512,2048,nt 2048,512,512,nt 2048,512,1536,nt"
  # cuBLAS first: should the sweep run out of a command's time, the anchors are in hand.
  # shellcheck disable=SC2086
  python3 "$here/torch-product-anchors.py" $shapes > "$out/products-torch.jsonl" 2>> "$out/products.err" || failed=1
  for s in $shapes; do
    IFS=, read -r m n k layout <<< "$s"
    flags=""; [ "${layout:0:1}" = t ] && flags="--at"; [ "${layout:1:1}" = t ] && flags="$flags --bt"
    # shellcheck disable=SC2086
    "$kiln" bench matmul --json --m "$m" --n "$n" --k "$k" $flags --sweep --splits 2,4,8 \
      --cpu-rows 8 --repeats 30 --cpu-budget 1 || failed=1
  done > "$out/products.json" 2>> "$out/products.err"
fi

if stage decode; then
  # A cache tensor the adapter cannot bind (f16 B 8 at 128k is 2 GiB a tensor, one word over
  # the usual native limit) is skipped with a line saying so, not counted as a failure.
  binding=$("$kiln" info --json 2> /dev/null | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["limits"]["max_storage_buffer_binding_size"])' \
    2> /dev/null || echo 0)
  {
    for dtype in f16 f32; do
      elem=4; [ "$dtype" = f16 ] && elem=2
      for shape in "1 32 8 128" "8 32 8 128" "1 16 16 64"; do
        read -r b hq hkv d <<< "$shape"
        for n in 1024 8192 32768 131072; do
          # PyTorch's anchors skip caches over 8 GB; so does this.
          size=$(( b * hkv * n * d * 2 * elem ))
          [ "$size" -gt 8000000000 ] && continue
          tensor=$(( size / 2 ))
          if [ "$binding" -gt 0 ] && [ "$tensor" -gt "$binding" ]; then
            echo "decode $dtype B$b Hq$hq/Hkv$hkv D$d N$n skipped: a cache tensor is $tensor bytes, the adapter binds $binding" >&2
            continue
          fi
          "$kiln" bench decode --json --b "$b" --hq "$hq" --hkv "$hkv" --d "$d" --n "$n" \
            --dtype "$dtype" --repeats 30 --cpu-budget 1 $sweep || failed=1
        done
      done
    done
  } > "$out/decode.jsonl" 2> "$out/decode.err"
  python3 "$here/torch-decode-anchors.py" > "$out/decode-torch.jsonl" 2> "$out/decode-torch.err" || failed=1
fi

# Grouped-query attention (forward + backward, Hkv 4 against the plain Hkv 16 at B1 H16 N4096
# D64, f32 and f16, causal or not) and generation: the flash demo's gqa preset trained 4 steps,
# then 256 tokens after a 256-character prompt with a key/value cache on the GPU (a warm-up
# first, then greedy runs of the captured one-token pass, then that pass replayed one token at a
# time, then each pass recorded as it comes) and on the CPU path, in flash's own words.
if stage generate; then
  bin=${BIN_DIR:-$(dirname "$kiln")}
  {
    for dtype in f32 f16; do
      for hkv in 16 4; do
        for causal in "" --causal; do
          "$kiln" bench attention --json --b 1 --h 16 --kv-heads "$hkv" --n 4096 --d 64 \
            --dtype "$dtype" $causal --backward --no-naive --cpu-slices 1 --cpu-budget 1 \
            --repeats 20 | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))' \
            || failed=1
        done
      done
    done
  } > "$out/gqa.jsonl" 2> "$out/gqa.err"
  ckpt="$out/gqa.ckpt"
  "$bin/flash" --bench --preset gqa --steps 4 --no-sweep --save "$ckpt" > "$out/generate.txt" 2>&1 || failed=1
  prompt=$(python3 -c "print(('the quick fox sees the red dog.\n12+34=46\n' * 7)[:256], end='')")
  "$bin/flash" sample --checkpoint "$ckpt" --prompt "$prompt" --tokens 256 --path both \
    --each-call 2>> "$out/generate.txt" > /dev/null || failed=1
  grep -E "tokens/s|same|differ" "$out/generate.txt"
fi

# What the NVIDIA driver compiled (registers, instruction mix) for the forward and backward
# flash passes and the matmul picks: their pipelines built once into fresh driver caches, then
# read back (scripts/lib/nv_pipeline_sass.py; needs zstd, and nvdisasm for the instruction mix).
# Skipped, with a line saying so, where there is no NVIDIA driver or no zstd.
if stage sass; then
  if ! command -v nvidia-smi > /dev/null || ! command -v zstd > /dev/null; then
    echo "sass stage skipped: it needs an NVIDIA driver (nvidia-smi) and zstd" | tee "$out/sass.txt"
  else
    cache="$out/driver-cache"
    rm -rf "$cache"
    # Runs a kiln command with the driver's disk cache in a fresh folder $cache/$1 (the driver
    # writes its cache only into a folder that exists).
    cached() {
      local dir="$cache/$1"
      shift
      mkdir -p "$dir"
      __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH="$dir" \
        __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 "$kiln" "$@" > /dev/null || failed=1
    }
    {
      for dtype in f16 f32; do
        cached "attention-$dtype" bench attention --b 1 --h 2 --n 256 --d 64 --dtype "$dtype" \
          --backward --no-naive --cpu-slices 1 --repeats 2
        cached "matmul-$dtype" bench matmul --m 4096 --n 4096 --k 4096 --dtype "$dtype" \
          --cpu-rows 1 --repeats 2
        for what in attention matmul; do
          echo "== $what $dtype (the selector's picks, in the cache's file order)"
          python3 "$here/lib/nv_pipeline_sass.py" "$cache/$what-$dtype" "$out/sass-$what-$dtype" || failed=1
        done
      done
    } > "$out/sass.txt" 2>&1
    cat "$out/sass.txt"
  fi
fi

if [ -n "$anchors" ]; then
  python3 "$anchors" > "$out/anchors.jsonl" 2> "$out/anchors.err" || failed=1
fi

python3 "$here/lib/gpu_table.py" "$out" | tee "$out/table.md"
exit "$failed"
