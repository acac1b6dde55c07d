#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine with Node >= 20.19 and npm:
# Debian's chromium (headless browser tests; its SwiftShader Vulkan driver also runs WebGPU through Dawn in Node),
# libvulkan1 (the Vulkan loader Dawn needs), and the npm packages pinned in package-lock.json.
# Idempotent: skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' || need+=(libvulkan1)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
