// Stand-alone runner of the LoRA memory rows (src/cli/bench-memory-lora.ts), one layer count per process so each
// measurement starts from an empty heap:
//   npx tsx tools/bench/lora-memory.ts --backend wasm --layers 1,2,3 --tokens 1x1536 [--json F]
import * as fs from 'node:fs';
import { initBackend, type BackendName } from '../../src/model/backend';
import { QWEN3B_CONFIG, RAGEN_LORA, extrapolateLayers, measureLoraMemory, type LoraMemoryRow } from '../../src/cli/bench-memory-lora';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const backend = arg('backend', 'wasm') as BackendName;
const layers = arg('layers', '1,2').split(',').map(Number);
const [batch, tokens] = arg('tokens', '1x1536').split('x').map(Number);
const json = arg('json', '');

await initBackend(backend);
const rows: LoraMemoryRow[] = [];
for (const n of layers) {
  const t0 = Date.now();
  rows.push(...await measureLoraMemory({ shape: 'qwen3b', config: QWEN3B_CONFIG, layers: n, batch, tokens, lora: RAGEN_LORA, seed: 1 }));
  console.error(`${n} layer(s): ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
rows.push(...extrapolateLayers(rows, QWEN3B_CONFIG.num_hidden_layers));
const gib = (b: number) => (b / 2 ** 30).toFixed(2);
for (const r of rows) console.log(`${r.shape} ${r.how.padEnd(12)} layers ${String(r.layers).padStart(2)}  ${r.backend}  ${r.tokens}  ${r.phase.padEnd(12)}  peak ${gib(r.peakBytes)} GiB  (resident ${gib(r.residentBytes)} GiB)`);
if (json) fs.writeFileSync(json, JSON.stringify({ memory: rows }, null, 2) + '\n');
