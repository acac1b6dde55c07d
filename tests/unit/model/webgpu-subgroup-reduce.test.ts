// A row reduction with subgroupAdd / subgroupMax on our own pipeline (src/model/kernels/webgpuSubgroupReduce.ts),
// on SwiftShader (VK_ICD_FILENAMES set to it unless already set), whose device has `subgroups` (subgroups of 4),
// against tfjs's sum / max on the cpu backend's copy of the same values.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import { subgroupRowReduce } from '../../../src/model/kernels/webgpuSubgroupReduce';
import { ownProgramBackend, tensorOf } from '../../../src/model/kernels/webgpuOwnProgram';
import { webgpuDeviceHas } from '../../../src/model/webgpuDevice';

beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
}, 120_000);

describe('subgroup row reductions', () => {
  it('sum, sum of squares and max of each row agree with a plain reduction (rows shorter and longer than 64)', async () => {
    expect(webgpuDeviceHas('subgroups')).toBe(true);
    const backend = ownProgramBackend();
    for (const [R, C] of [
      [3, 1],
      [5, 37],
      [7, 300],
    ]) {
      const x = tf.randomUniform([R, C], -2, 1, 'float32', R * C);
      const values = (await x.data()) as Float32Array;
      const rows = Array.from({ length: R }, (_, r) => Array.from(values.subarray(r * C, (r + 1) * C)));
      const plain = {
        sum: rows.map((row) => row.reduce((a, b) => a + b, 0)),
        sumSquares: rows.map((row) => row.reduce((a, b) => a + b * b, 0)),
        max: rows.map((row) => Math.max(...row)),
      };
      for (const op of ['sum', 'sumSquares', 'max'] as const) {
        const out = tensorOf(subgroupRowReduce(backend, x, op));
        const got = Array.from((await out.data()) as Float32Array);
        expect(got.length).toBe(R);
        got.forEach((v, r) => {
          const scale = rows[r].reduce((a, b) => a + Math.abs(op === 'sumSquares' ? b * b : b), 0);
          if (op === 'max') expect(v, `${op} row ${r} of [${R}, ${C}]`).toBe(Math.fround(plain.max[r]));
          else
            expect(Math.abs(v - plain[op][r]), `${op} row ${r} of [${R}, ${C}]`).toBeLessThanOrEqual(
              C * 2 ** -23 * scale,
            );
        });
        out.dispose();
      }
      x.dispose();
    }
  });
});
