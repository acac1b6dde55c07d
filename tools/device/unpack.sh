#!/usr/bin/env bash
# The other half of tools/device/pack.sh, run on the GPU server from the repository root: unpacks node and the
# pruned node_modules, links node_modules into the checkout, and prints what the server offers (GPU, Vulkan, torch).
# Usage:  source tools/device/unpack.sh   (so that PATH keeps the unpacked node)
set -eu
dest=/opt/ragen-runtime
mkdir -p "$dest"
tar -xJf .device/runtime.tar.xz -C "$dest"
[ -e node_modules ] || ln -s "$dest/node_modules" node_modules
export PATH="$dest/bin:$PATH"
echo "node $(node --version); cpus $(nproc); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
ldconfig -p | grep -q libvulkan.so.1 && echo "libvulkan: yes" || echo "libvulkan: MISSING (Dawn needs it: carry .gl as the device README says)"
set +eu
