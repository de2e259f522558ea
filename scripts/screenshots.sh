#!/usr/bin/env bash
# Screenshots of every walkthrough stage at 1920×1080, for review (not checked in):
#   - each page of the built site in presenter mode, in headless Chromium (WebGPU on SwiftShader),
#     and handout.pdf beside them: every stage's screenshot with its title and narration, two
#     stages to an A4 page (Chromium's print to PDF);
#   - each native demo's --talk window under Xvfb (the adapter in hand; lavapipe without a GPU).
# Usage: scripts/screenshots.sh [OUT_DIR]   (default: screenshots/; builds what is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

out=${1:-screenshots}
mkdir -p "$out"
ensure_lavapipe
ensure_rust_parts
ensure_browser
ensure_window_tools
# The site as the sources are now (incremental after the first build).
bash scripts/build-site.sh

echo "== the site's walkthroughs (headless Chromium, 1920×1080)"
status=0
node site/tests/capture-talk.mjs "$out" || status=1

echo "== the native walkthroughs (Xvfb, 1920×1080)"
# The test profile: dependencies optimised, quick to build after scripts/test.sh.
cargo build --quiet -p waves -p attention -p flash -p kiln-fleet
display=:91
Xvfb "$display" -screen 0 1920x1080x24 -nolisten tcp 2>/dev/null &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
sleep 1
# name, then the command that opens its walkthrough.
shots() {
  local name=$1; shift
  local log
  log=$(mktemp)
  DISPLAY=$display "$@" > "$log" 2>&1 &
  local pid=$!
  # The window prints "walkthrough: N stages, starting at 1" once its device is ready.
  local count=""
  for _ in $(seq 240); do
    count=$(sed -n 's/^walkthrough: \([0-9]*\) stages.*/\1/p' "$log")
    [ -n "$count" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.5
  done
  if [ -z "$count" ]; then
    echo "$name: no walkthrough started:"; cat "$log"; status=1; rm -f "$log"; return
  fi
  local win
  win=$(DISPLAY=$display xdotool search --sync --pid $pid 2>/dev/null | head -1)
  DISPLAY=$display xdotool windowmove "$win" 0 0 windowsize "$win" 1920 1080
  for stage in $(seq "$count"); do
    sleep 4
    local file
    file=$(printf '%s/native-%s-%02d.png' "$out" "$name" "$stage")
    DISPLAY=$display import -window root "$file" && echo "wrote $file"
    DISPLAY=$display xdotool windowfocus --sync "$win" key Right 2>/dev/null || DISPLAY=$display xdotool key Right
  done
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  rm -f "$log"
}
shots waves target/debug/waves --talk
shots attention target/debug/attention --talk
shots flash target/debug/flash --talk
shots fleet target/debug/fleet talk
echo "== screenshots in $out/ ($(ls "$out" | wc -l) files)"
exit $status
