// tfjs-wasm's matmul (XNNPACK, an operand transposed first where the product asks: src/model/wasmMatMul.ts) against
// our own kernel (kernels.c's matmul), for every product of an update at the tiny shapes (src/bench/matmul.ts's
// cases, 8 x 128 tokens) and generation's LM head (a decode step of 1 to 32 dialogues), in one
// sitting: the measurement behind wasmMatMul.ts's choice of route. A third column times that route ('auto').
//
//   npx tsx tools/bench/wasm-matmul.ts [--shapes tiny,sokoban-tiny] [--repeats 7] [--json FILE]
//
// Each repeat times every case with each route, back to back, the order reversed every other repeat; a kernel's
// time in a repeat is the least of CALLS single calls (a wasm matmul runs synchronously, so performance.now() around
// the call is its time). The table gives the least and the median over the repeats. As in training, grad-weight's
// right operand (an activation) is a fresh tensor at every call: tfjs-wasm keeps XNNPACK's packed copy of a right
// operand it has seen (a weight), which a bench reusing one tensor would wrongly credit it with; the copy is untimed.
// Generation's head is h W with W stored transposed once per rollout ([H, V]: qwen2.ts's headT), so the same
// right operand at every call, as here.
import * as fs from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../src/model/backend';
import { matmulCases, type MatmulCase } from '../../src/bench/matmul';
import { benchShape } from '../../src/bench/model';
import { setWasmMatMulRoute, type WasmMatMulRoute } from '../../src/model/wasmMatMul';

const arg = (name: string, fallback: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback;
const shapes = arg('--shapes', 'tiny,sokoban-tiny').split(',');
const repeats = Number(arg('--repeats', '7'));
const jsonFile = process.argv.includes('--json') ? arg('--json', '') : null;
const CALLS = 5;
const ROUTES = ['tfjs', 'own', 'auto'] as const satisfies readonly WasmMatMulRoute[];

await initBackend('wasm');

/** Rows of generation's LM head: a decode step of 32 dialogues (the bench's rollout) and of fewer, as dialogues end. */
const DECODE_ROWS = [1, 4, 8, 16, 32];

/** The update's products, and generation's LM head for a decode step (h W, W stored [H, V]). */
function cases(): MatmulCase[] {
  return shapes.flatMap((name) => {
    const shape = benchShape(name);
    const { hidden_size: H, vocab_size: V } = shape.config;
    const decodeHead = (m: number): MatmulCase => ({
      key: `${name} head generate ${m}x${V}x${H}`,
      op: 'head',
      pass: 'forward',
      m,
      n: V,
      k: H,
      transposeA: false,
      transposeB: false,
      callsPerUpdate: 0,
    });
    return [...matmulCases(shape, 8, 128), ...DECODE_ROWS.map(decodeHead)];
  });
}

/** The least time of CALLS calls of `route` on the case's operands, in ms. */
function time(route: WasmMatMulRoute, cs: MatmulCase, a: tf.Tensor, b: tf.Tensor): number {
  setWasmMatMulRoute(route);
  let best = Infinity;
  for (let i = 0; i < CALLS; i++) {
    const right = cs.pass === 'grad-weight' ? tf.clone(b).add(0) : b;
    const start = performance.now();
    const c = tf.matMul(a, right, cs.transposeA, cs.transposeB);
    best = Math.min(best, performance.now() - start);
    c.dispose();
    if (right !== b) right.dispose();
  }
  return best;
}

const all = cases();
const operands = all.map((cs, i) => [
  tf.randomUniform(cs.transposeA ? [cs.k, cs.m] : [cs.m, cs.k], -1, 1, 'float32', 2 * i + 1),
  tf.randomUniform(cs.transposeB ? [cs.n, cs.k] : [cs.k, cs.n], -1, 1, 'float32', 2 * i + 2),
]);
const samples = all.map(() => ({ tfjs: [] as number[], own: [] as number[], auto: [] as number[] }));
for (let r = 0; r < repeats; r++) {
  all.forEach((cs, i) => {
    const order = r % 2 === 0 ? ROUTES : [...ROUTES].reverse();
    for (const route of order) samples[i][route].push(time(route, cs, operands[i][0], operands[i][1]));
  });
}
setWasmMatMulRoute('auto');
tf.dispose(operands.flat());

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const min = (xs: number[]) => Math.min(...xs);
const rows = all.map((cs, i) => ({
  key: cs.key,
  transposeA: cs.transposeA,
  transposeB: cs.transposeB,
  callsPerUpdate: cs.callsPerUpdate,
  tfjsMinMs: min(samples[i].tfjs),
  tfjsMedianMs: median(samples[i].tfjs),
  ownMinMs: min(samples[i].own),
  ownMedianMs: median(samples[i].own),
  autoMinMs: min(samples[i].auto),
  autoMedianMs: median(samples[i].auto),
}));
console.log(`repeats ${repeats}, least of ${CALLS} calls each; load average ${(await loadAverage()) ?? '?'}`);
console.log('| case | tfjs min / median ms | own min / median ms | tfjs / own (medians) | auto min / median ms |');
console.log('|---|---:|---:|---:|---:|');
const pair = (lo: number, mid: number) => `${lo.toFixed(3)} / ${mid.toFixed(3)}`;
for (const r of rows) {
  console.log(
    `| ${r.key} | ${pair(r.tfjsMinMs, r.tfjsMedianMs)} | ${pair(r.ownMinMs, r.ownMedianMs)} | ` +
      `${(r.tfjsMedianMs / r.ownMedianMs).toFixed(2)} | ${pair(r.autoMinMs, r.autoMedianMs)} |`,
  );
}
for (const name of shapes) {
  const mine = rows.filter((r) => r.key.startsWith(`${name} `));
  const sum = (f: (r: (typeof rows)[number]) => number) => mine.reduce((s, r) => s + f(r) * r.callsPerUpdate, 0);
  console.log(
    `${name}: an update's matmuls (median x calls per update) tfjs ${sum((r) => r.tfjsMedianMs).toFixed(1)} ms, ` +
      `own ${sum((r) => r.ownMedianMs).toFixed(1)} ms, auto ${sum((r) => r.autoMedianMs).toFixed(1)} ms`,
  );
}
if (jsonFile) fs.writeFileSync(jsonFile, JSON.stringify({ repeats, calls: CALLS, rows }, null, 2));

async function loadAverage(): Promise<string | null> {
  const os = await import('node:os');
  return os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
}
