// Compiles every f16 and subgroup-matrix matmul program (src/model/kernels/webgpuHalfMatmul.ts) on Dawn's null
// adapter, which offers every feature and computes nothing, and prints one JSON object: each program's name and its
// compiler messages and pipeline errors (none expected), plus those of a deliberately broken program (some expected).
// Run in a process of its own by webgpu-half-matmul.test.ts: a second Dawn instance beside the tests' SwiftShader one
// hung or aborted the test process.
import { subgroupMatrixWgsl, tiledHalfWgsl, type HalfMatMulShape } from '../../../src/model/kernels/webgpuHalfMatmul';

const { create, globals } = (await import('webgpu')) as unknown as { create: (f: string[]) => GPU; globals: object };
Object.assign(globalThis, globals);
const adapter = (await create(['backend=null', 'enable-dawn-features=allow_unsafe_apis']).requestAdapter())!;
const device = await adapter.requestDevice({
  requiredFeatures: ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'] as GPUFeatureName[],
});
const maxSubgroup = (device as unknown as { adapterInfo: { subgroupMaxSize: number } }).adapterInfo.subgroupMaxSize;

async function problems(code: string): Promise<string[]> {
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code });
  const messages = (await module.getCompilationInfo()).messages.map((m) => `${m.type}: ${m.message}`);
  device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const error = await device.popErrorScope();
  return error ? [...messages, error.message] : messages;
}

const shapes: HalfMatMulShape[] = [];
for (const transposeA of [false, true])
  for (const transposeB of [false, true])
    for (const [aStorage, bStorage] of [
      ['f32', 'half'],
      ['half', 'half'],
      ['f32', 'f32'],
    ] as const)
      shapes.push({
        M: 1,
        N: 1,
        K: 1,
        transposeA,
        transposeB,
        aStorage,
        bStorage,
        bias: transposeA ? 'row' : transposeB ? 'full' : 'none',
      });

const programs: Record<string, string[]> = {};
for (const s of shapes) {
  const shape = JSON.stringify(s);
  programs[`f16 ${shape}`] = await problems(tiledHalfWgsl(s, 'f16'));
  programs[`f16-storage ${shape}`] = await problems(tiledHalfWgsl(s, 'f16-storage'));
  for (const size of [8, 16]) {
    const config = { componentType: 'f16', resultComponentType: 'f32', M: size, N: size, K: size };
    // The null adapter's largest subgroup is 128 and a workgroup at most 256: one subgroup, or two of them.
    for (const [subgroupsM, subgroupsN, tilesM, tilesN] of [
      [1, 1, 4, 2],
      [2, 1, 2, 2],
      [1, 2, 1, 3],
    ]) {
      const settings = { config, maxSubgroupSize: maxSubgroup, subgroupsM, subgroupsN, tilesM, tilesN };
      programs[`subgroup-matrix ${JSON.stringify({ ...settings, config: size })} ${shape}`] = await problems(
        subgroupMatrixWgsl(s, settings),
      );
    }
  }
}
const broken = await problems(tiledHalfWgsl(shapes[0], 'f16').replace('enable f16;', ''));
process.stdout.write(JSON.stringify({ programs, broken }) + '\n');
process.exit(0);
