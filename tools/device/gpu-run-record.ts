// Writes the record of a GPU run (tools/device/gpuRunRecord.ts) from the files tools/device/full-run.sh left in $OUT:
//   node --import tsx tools/device/gpu-run-record.ts --from OUT --command "bash tools/device/full-run.sh" \
//        [--tiny] [--out FILE] [--into docs/gpu-runs]
// --out: where to write it (default OUT/gpu-run.json); --into: also into this folder as <date>-<commit>.json (then
// regenerate BENCHMARKS.md's table: node --import tsx tools/device/gpu-runs-table.ts). --tiny: full-run.sh's
// FULL_RUN_TINY sizes. Prints the record.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildGpuRunRecord, recordPath } from './gpuRunRecord';

const { values: args } = parseArgs({
  options: {
    from: { type: 'string' },
    command: { type: 'string' },
    tiny: { type: 'boolean', default: false },
    out: { type: 'string' },
    into: { type: 'string' },
  },
});
if (!args.from || !args.command) {
  console.error('usage: gpu-run-record.ts --from OUT --command "..." [--tiny] [--out FILE] [--into DIR]');
  process.exit(2);
}
const record = buildGpuRunRecord(args.from, { command: args.command, tiny: args.tiny });
const text = JSON.stringify(record, null, 2) + '\n';
const out = args.out ?? path.join(args.from, 'gpu-run.json');
writeFileSync(out, text);
console.log(text.trimEnd());
console.log(`gpu-run-record: wrote ${out}`);
if (args.into) {
  mkdirSync(args.into, { recursive: true });
  const file = recordPath(args.into, record);
  writeFileSync(file, text);
  console.log(`gpu-run-record: wrote ${file}`);
}
