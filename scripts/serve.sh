#!/usr/bin/env bash
# Serves the built site on 127.0.0.1 (a secure context, which WebGPU needs).
# Usage: scripts/serve.sh [PORT]   (build it first with scripts/build-site.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
port=${1:-8080}
[ -f site/dist/index.html ] || { echo "site/dist/ is missing: run scripts/build-site.sh" >&2; exit 1; }
echo "Kiln site: http://127.0.0.1:$port/"
exec python3 -m http.server "$port" --bind 127.0.0.1 --directory site/dist
