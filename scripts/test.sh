#!/usr/bin/env bash
# Kiln's test command. Installs what is missing (lavapipe, the wasm32 target, fmt/clippy,
# Chromium, Xvfb and ImageMagick, PostgreSQL for the collector's second backend, nginx for its
# proxy test, wasm-bindgen-cli at the pinned version, the site's npm packages), then: format
# check, the site build (wasm32) and the native build of every test, both with clippy's lints and
# warnings denied, every Rust test — CPU references, template validation, GPU kernels on the
# adapter in hand (lavapipe without a GPU), bad-input and CLI tests, the collector on SQLite and
# on a PostgreSQL server its tests start, the demos' headless benchmarks and their native windows
# under Xvfb — then the browser tests in headless Chromium (WebGPU on SwiftShader) against the
# built site, and ends with one "N passed, N failed, N skipped" line.
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
ensure_postgresql
ensure_nginx
ensure_wasm_bindgen

stage "cargo fmt --check"
cargo fmt --all -- --check
# The family modules are declared by the build script (#[path]), out of cargo fmt's reach.
rustfmt --edition 2024 --check kernels/families/*/mod.rs

# The scripts that run elsewhere (bench-gpu.sh and its helpers on the GPU machine) parse here.
stage "scripts parse (bash -n, Python's ast)"
for f in scripts/*.sh scripts/lib/*.sh .ci/run; do bash -n "$f"; done
python3 -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' scripts/*.py scripts/lib/*.py

# Clippy runs inside the builds below, as the compiler of the workspace's crates (what `cargo
# clippy` does, without its second, check-only build of every dependency): the native build of
# every target that `cargo test` runs and the site's wasm32 build both fail on any clippy or
# compiler warning, as `cargo clippy --all-targets -- -D warnings` would.
export RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver)"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
stage "building the site (wasm32 with clippy's lints, wasm-bindgen, wasm-opt)"
bash scripts/build-site.sh 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

stage "building the tests (native, with clippy's lints)"
cargo test --workspace --no-run 2>&1 | tee -a "$log"
build_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$build_status

stage "cargo test"
cargo test --workspace --no-fail-fast -- --nocapture 2>&1 | tee -a "$log"
test_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$test_status
stage "browser tests (headless Chromium: WebGPU on SwiftShader, no adapter, not a secure context)"
cargo build --quiet --bin kiln \
  && KILN_BIN="$(realpath "${CARGO_TARGET_DIR:-target}")/debug/kiln" node --test site/tests/*.test.mjs 2>&1 | tee -a "$log"
browser_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$browser_status
stage ""
set -e

# Sum cargo's and node's results; a test that had nothing to run here counts as skipped.
read -r passed failed skipped < <(awk -f scripts/lib/tally.awk "$log")
adapter=$(grep -m1 '^GPU tests on adapter:' "$log" || echo "GPU tests on adapter: none found")
echo "== $adapter"
grep -E '^profile .* validated by naga' "$log" || true
echo "== stage times"
printf '%s\n' "${times[@]}"
echo "== $(( $(date +%s) - began )) s in all"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi  # a build failure counts
echo "kiln: $passed passed, $failed failed, $skipped skipped"
exit "$status"
