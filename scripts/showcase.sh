#!/usr/bin/env bash
# The showcase. Installs what is missing (the software Vulkan adapter when there is no GPU
# driver, the wasm toolchain), builds the site and serves it on 127.0.0.1 (printing the URL),
# shows the adapter and its kernel variants, then: with a display, opens the native demo; without
# one, runs every demo headless and prints one table of GPU vs CPU throughput, writing the waves
# and attention demos' last GPU frames as PNG under showcase/, then trains the flash demo's
# small transformer on both paths. Ctrl-C stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

DEMOS=(waves attention)
PORT=${PORT:-8080}

ensure_lavapipe
ensure_apt python3
bash scripts/build-site.sh
cargo build --quiet --release --bin kiln --bin flash "${DEMOS[@]/#/--bin=}"
bin=${CARGO_TARGET_DIR:-target}/release

python3 -m http.server "$PORT" --bind 127.0.0.1 --directory site/dist >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
sleep 1
kill -0 "$server" 2>/dev/null || { echo "cannot serve on 127.0.0.1:$PORT (in use? set PORT)" >&2; exit 1; }

echo
echo "== the adapter"
"$bin/kiln" info
"$bin/kiln" kernels | tail -n 1
echo
echo "Kiln site: http://127.0.0.1:$PORT/  (open it in a browser with WebGPU)"
echo

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "== opening the native demos (close a window for the next)"
  for demo in "${DEMOS[@]}" flash; do "$bin/$demo"; done
else
  # A software adapter (lavapipe: the CPU runs the GPU's work) gets fewer frames: a 1024² frame
  # takes seconds there. The profile is read whole, not through a pipe a reader may close early.
  frames=30
  software=0
  info=$("$bin/kiln" info --json)
  if [[ $info == *'"device_type": "cpu"'* ]]; then
    frames=5
    software=1
  fi
  mkdir -p showcase
  echo "== no display: every demo headless, $frames frames per path"
  for demo in "${DEMOS[@]}"; do
    "$bin/$demo" --bench --frames "$frames" --json --png "showcase/$demo.png" > "showcase/$demo.json"
  done
  python3 - "${DEMOS[@]}" <<'PY'
import json, sys
rows = [json.load(open(f"showcase/{d}.json")) for d in sys.argv[1:]]
# The settings column is as wide as its longest entry: nothing is cut.
w = max(len("settings"), *(len(r["settings"]) for r in rows))
print(f"{'demo':<10} {'settings':<{w}} {'GPU frames/s':>13} {'CPU frames/s':>13} {'GPU/CPU':>8}  agree  clock (GPU)")
for r in rows:
    g, c = 1e3 / r["gpu"]["median_ms"], 1e3 / r["cpu"]["median_ms"]
    ratio = f"{g / c:.1f}" if g / c >= 0.1 else f"{g / c:.3f}"
    print(f"{r['demo']:<10} {r['settings']:<{w}} {g:>13.1f} {c:>13.2f} {ratio:>7}x  {str(r['checks'].get('agree')):<5}  {r['gpu']['clock']}")
print(f"adapter: {rows[0]['adapter']} ({rows[0]['backend']}); CPU path: plain single-threaded loops")
print("attention: a frame is one forward pass of the encoder over the text's tokens")
PY
  echo "frames written: $(printf 'showcase/%s.png ' "${DEMOS[@]}")"
  # The flash demo trains a small transformer on both paths: its unit is a training step.
  steps=$((frames * 2))
  echo "== flash: the small preset trained $steps steps on the GPU and on the CPU path"
  "$bin/flash" --bench --preset small --steps "$steps" --json > showcase/flash.json
  python3 - <<'PY'
import json
r = json.load(open("showcase/flash.json")); c = r["comparison"]
print(f"flash      preset {c['preset']} ({c['parameters']} parameters), {c['steps']} steps: "
      f"GPU {c['gpu_median_ms_per_step']:.1f} ms/step, {c['cpu']['path']} {c['cpu_median_ms_per_step']:.1f} ms/step, "
      f"speed-up {c['speedup']:.2f}x, loss {c['gpu']['losses'][0]:.3f} -> {c['gpu']['losses'][-1]:.3f}, drift {100 * c['drift']:.4f} % (wall clock)")
PY
  if [ "$software" -eq 1 ]; then
    echo "why the GPU path can trail the CPU path here: a software adapter's \"GPU\" is this CPU emulating one (shaders compiled to CPU code, every dispatch, copy and wait through the driver), so the GPU path does the same arithmetic plus that overhead; on a real GPU the order reverses"
  fi
fi
echo
echo "Serving http://127.0.0.1:$PORT/ — Ctrl-C to stop."
wait "$server"
