// Our own WebGPU pipelines on the lent GPU, before anything is timed with them: which optional features the
// adapter offers and the backend's device got (src/model/webgpuDevice.ts), each f16 matmul mode's check against
// exact products and the subgroup reduction's against a plain sum (src/model/webgpuSelfCheck.ts); then, for
// tiled (f32) and every f16 mode that passed, the TFLOP/s of a few of qwen0.5b's large products at 1 x 1,536
// tokens, through the model's own route (tf.matMul with RAGEN_WEBGPU_MATMUL's choice; the weight a tf.Variable, so
// the f16 modes read its f16 copy). A mode that failed its check is not timed. Where subgroup matrices exist, a few
// other tilings of that kernel (subgroups per workgroup x result matrices per subgroup) are checked the same way and
// timed too, called directly with the weight packed beforehand: rows "subgroup-matrix <SMxSN>x<TMxTN>".
//   node --import tsx tools/device/webgpu-selfcheck.ts [--backend webgpu] [--tokens 1536] [--tiny] [--json FILE]
// Run by tools/device/full-run.sh (section `selfcheck`); on this machine (SwiftShader, slow): --tiny (products of a
// 64-wide model at 64 rows, for the plumbing).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../src/model/backend';
import { webgpuAdapterCapabilities, describeMatmulFeatures } from '../../src/model/webgpuAdapter';
import { webgpuDeviceFacts } from '../../src/model/webgpuDevice';
import { halfMatMul, packHalfFlat, type SubgroupMatrixSettings } from '../../src/model/kernels/webgpuHalfMatmul';
import { ownProgramBackend, tensorOf } from '../../src/model/kernels/webgpuOwnProgram';
import { deviceSubgroupMatrixSettings, setWebGpuMatMul, type WebGpuMatMul } from '../../src/model/webgpuMatMulRoute';
import { selfCheckHalfMatMul, selfCheckWebGpuModes } from '../../src/model/webgpuSelfCheck';

const { values: args } = parseArgs({
  options: {
    backend: { type: 'string', default: 'webgpu' },
    tokens: { type: 'string', default: '1536' },
    tiny: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});
const info = await initBackend(args.backend as 'webgpu');
if (info.name !== 'webgpu') throw new Error(`webgpu-selfcheck: needs the webgpu backend, got ${info.name}`);
const adapter = await webgpuAdapterCapabilities();
const device = webgpuDeviceFacts();
console.log(`webgpu-selfcheck: ${info.adapter}`);
if (adapter) console.log(`adapter: ${describeMatmulFeatures(adapter)}`);
console.log(
  `device features: ${device?.features.join(', ')}; subgroup matrix shapes: ${JSON.stringify(device?.subgroupMatrixConfigs)}`,
);

const checks = await selfCheckWebGpuModes();
for (const c of checks) {
  console.log(
    `check ${c.mode}: ${c.ok ? 'ok' : c.maxRelError === null && c.reason?.startsWith('needs') ? 'not available' : 'FAILED'}` +
      (c.maxRelError !== null ? `, max |error| / sum of the terms' magnitudes ${c.maxRelError.toExponential(2)}` : '') +
      (c.reason ? ` (${c.reason})` : ''),
  );
}

// qwen0.5b (hidden 896, MLP 4864, q/k/v stacked 1152 wide; --tiny: 64, 192, 128) at `tokens` rows (--tiny: 64): x W^T
// for the largest layer products.
const [rows, hidden, mlp, qkv] = args.tiny ? [64, 64, 192, 128] : [Number(args.tokens), 896, 4864, 1152];
const products: Array<{ name: string; m: number; n: number; k: number }> = [
  { name: 'gateUp forward', m: rows, n: 2 * mlp, k: hidden },
  { name: 'down forward', m: rows, n: hidden, k: mlp },
  { name: 'qkv forward', m: rows, n: qkv, k: hidden },
];
const modes: WebGpuMatMul[] = [
  'tiled',
  ...checks.filter((c) => c.ok && c.mode !== 'subgroup-reduce').map((c) => c.mode as WebGpuMatMul),
];
// Other tilings of the subgroup-matrix kernel than the route's default, each checked before it is timed.
const tilings: Array<{ name: string; settings: SubgroupMatrixSettings }> = [];
const base = deviceSubgroupMatrixSettings();
if (base && checks.some((c) => c.mode === 'subgroup-matrix' && c.ok)) {
  const limit = device?.maxInvocationsPerWorkgroup ?? 256;
  for (const [subgroupsM, subgroupsN, tilesM, tilesN] of [
    [1, 1, 4, 2],
    [2, 2, 2, 2],
    [2, 2, 4, 2],
    [4, 2, 2, 2],
  ]) {
    if (subgroupsM * subgroupsN * base.maxSubgroupSize > limit) continue;
    const settings = { ...base, subgroupsM, subgroupsN, tilesM, tilesN };
    const name = `subgroup-matrix ${subgroupsM}x${subgroupsN}x${tilesM}x${tilesN}`;
    const check = await selfCheckHalfMatMul('subgroup-matrix', settings);
    console.log(
      `check ${name}: ${check.ok ? 'ok' : 'FAILED'}` +
        (check.maxRelError !== null ? `, ${check.maxRelError.toExponential(2)}` : '') +
        (check.reason ? ` (${check.reason})` : ''),
    );
    checks.push({ ...check, reason: [name, check.reason].filter(Boolean).join(': ') });
    if (check.ok) tilings.push({ name, settings });
  }
}

const timings: Array<{ product: string; m: number; n: number; k: number; mode: string; ms: number; tflops: number }> =
  [];
/** ms per call of `call` (whose result it disposes): 2 untimed calls, then the better of two runs of 10. */
async function msPerCall(call: () => tf.Tensor): Promise<number> {
  const run = async (calls: number) => {
    const start = performance.now();
    let last: tf.Tensor | null = null;
    for (let i = 0; i < calls; i++) {
      last?.dispose();
      last = call();
    }
    const probe = tf.tidy(() => last!.reshape([-1]).slice(0, 1));
    await probe.data();
    tf.dispose([last!, probe]);
    return (performance.now() - start) / calls;
  };
  await run(2); // compilation, and the f16 copy of a weight
  return Math.min(await run(10), await run(10));
}
const record = (p: { name: string; m: number; n: number; k: number }, mode: string, ms: number) => {
  const tflops = (2 * p.m * p.n * p.k) / (ms * 1e9);
  timings.push({ product: p.name, m: p.m, n: p.n, k: p.k, mode, ms, tflops });
  console.log(`${p.name} ${p.m}x${p.n}x${p.k} ${mode}: ${ms.toFixed(3)} ms, ${tflops.toFixed(2)} TFLOP/s`);
};
for (const p of products) {
  const x = tf.randomUniform([p.m, p.k], -1, 1, 'float32', 1);
  const init = tf.randomUniform([p.n, p.k], -1, 1, 'float32', 2);
  const w = tf.variable(init, false);
  init.dispose();
  for (const mode of modes) {
    setWebGpuMatMul(mode);
    record(p, mode, await msPerCall(() => tf.matMul(x, w, false, true)));
  }
  setWebGpuMatMul('tiled');
  if (tilings.length) {
    const own = ownProgramBackend();
    const half = tensorOf(packHalfFlat(own, w));
    for (const { name, settings } of tilings) {
      const call = () =>
        tensorOf(
          halfMatMul(
            own,
            'subgroup-matrix',
            { info: x, shape: [p.m, p.k], storage: 'f32' },
            { info: half, shape: [p.n, p.k], storage: 'half' },
            { transposeA: false, transposeB: true, subgroupMatrix: settings },
          ),
        );
      record(p, name, await msPerCall(call));
    }
    half.dispose();
  }
  tf.dispose([x, w]);
}
setWebGpuMatMul('tiled');

if (args.json) {
  writeFileSync(
    args.json,
    JSON.stringify({ adapter: info.adapter, adapterFeatures: adapter?.features, device, checks, timings }, null, 2) +
      '\n',
  );
  console.log(`wrote ${args.json}`);
}
