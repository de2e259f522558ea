#!/usr/bin/env bash
# Kiln's test command. Installs what is missing (lavapipe, the wasm32 target, fmt/clippy,
# Chromium, Xvfb and ImageMagick, wasm-bindgen-cli at the pinned version, the site's npm
# packages), then: format check, clippy with warnings denied (native and wasm32), the site build,
# every Rust test — CPU references, template validation, GPU kernels on the adapter in hand
# (lavapipe without a GPU), bad-input and CLI tests, the demos' headless benchmarks and their
# native windows under Xvfb — then the browser tests in headless Chromium (WebGPU on
# SwiftShader) against the built site, and ends with one "N passed, N failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

# Each stage's wall time, printed as it ends and summed up at the end.
began=$(date +%s)
stage_name="" stage_start=$began times=()
stage() {
  local now
  now=$(date +%s)
  if [ -n "$stage_name" ]; then
    times+=("$(printf '%5d s  %s' $((now - stage_start)) "$stage_name")")
    echo "== $stage_name: $((now - stage_start)) s"
  fi
  stage_name=$1 stage_start=$now
  [ -n "$1" ] && echo "== $1"
  return 0
}

stage "installing what is missing"
ensure_lavapipe
ensure_rust_parts
ensure_browser
ensure_window_tools
ensure_wasm_bindgen

stage "cargo fmt --check"
cargo fmt --all -- --check

stage "cargo clippy (native, warnings denied)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

stage "cargo clippy (wasm32-unknown-unknown: the kernel crate, the harness, the demos)"
cargo clippy -p kiln --lib -p kiln-app -p waves -p attention -p kiln-fleet -p fleet-web -p flash --target wasm32-unknown-unknown --quiet -- -D warnings

stage "building the site (wasm32, wasm-bindgen, wasm-opt)"
bash scripts/build-site.sh

stage "cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --no-fail-fast -- --nocapture 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
stage "browser tests (headless Chromium, WebGPU on SwiftShader)"
cargo build --quiet --bin kiln \
  && KILN_BIN="$PWD/target/debug/kiln" node --test site/tests/*.test.mjs 2>&1 | tee -a "$log"
browser_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$browser_status
stage ""
set -e

# Sum cargo's per-binary "test result: ok. N passed; M failed; …" lines and node's
# "# pass N" / "# fail N" lines.
read -r passed failed < <(awk '/^test result:/ {
  for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i }
}
/^# pass [0-9]+$/ { p += $3 }
/^# fail [0-9]+$/ { f += $3 }
END { print p + 0, f + 0 }' "$log")
adapter=$(grep -m1 '^GPU tests on adapter:' "$log" || echo "GPU tests on adapter: none found")
echo "== $adapter"
grep -E '^profile .* validated by naga' "$log" || true
echo "== stage times"
printf '%s\n' "${times[@]}"
echo "== $(( $(date +%s) - began )) s in all"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi  # a build failure counts
echo "kiln: $passed passed, $failed failed"
exit "$status"
