// Batched KV-cache generation on webgpu (Dawn in Node; SwiftShader on a machine without a GPU), where the fused
// KV-cache attention kernel writes the caches in place: a left-padded batch decodes exactly the tokens of
// full-sequence greedy decoding, and leaks no tensors. The full generate suite runs on wasm (generate.test.ts).
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { assertNoGpuError, initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';
import { generate } from '../../../src/model/generate';
import { K } from '../../../src/model/kernels/index';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { fullSequenceGreedy } from './greedy-reference';

const config = TINY_GENERATE_CONFIG;
const prompts = [
  [5, 17, 3],
  [9, 1, 44, 23, 8, 8, 30, 2, 12],
  [4, 4, 19, 36, 2, 7, 7, 21, 11, 40, 3, 15, 28, 6, 1, 33, 9],
];

let model: Qwen2Model;
beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
  model = new Qwen2Model(config, initQwen2Weights(config, 11));
});

describe('generate on webgpu', () => {
  it('decodes a left-padded batch through the fused KV-cache kernel exactly as full-sequence greedy decoding', async () => {
    expect(tf.getBackend()).toBe('webgpu');
    expect(tf.getKernel(K.cachedAttention, 'webgpu')).toBeDefined();
    const steps = 12;
    const greedy = { maxNewTokens: steps, temperature: 0, seed: 0, padTokenId: 0 };
    await generate(model, prompts.slice(0, 1), { ...greedy, maxNewTokens: 1 }); // the model's lazily built tables
    const before = tf.memory().numTensors;
    const out = await generate(model, prompts, greedy);
    expect(tf.memory().numTensors).toBe(before);
    for (let i = 0; i < prompts.length; i++) {
      const expected = await fullSequenceGreedy(model, prompts[i], steps);
      expect(new Set(expected).size).toBeGreaterThan(2); // not a degenerate repetition
      expect(out.tokens[i]).toEqual(expected);
    }
  });

  it("a command WebGPU refuses is reported once by assertNoGpuError, with the device's message", async () => {
    await generate(model, prompts, { maxNewTokens: 2, temperature: 0, seed: 0, padTokenId: 0 });
    await tf.ones([4]).data();
    expect(() => assertNoGpuError('here')).not.toThrow(); // a clean generation reports nothing
    const device = (tf.backend() as unknown as { device: GPUDevice }).device;
    device.createBuffer({ size: 4, usage: 0 }); // refused: a buffer needs a usage
    await device.queue.onSubmittedWorkDone();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(() => assertNoGpuError("in step 3's update")).toThrow(
      /WebGPU refused a command in step 3's update, so its results are not trustworthy: .*usage/i,
    );
    expect(() => assertNoGpuError('here')).not.toThrow(); // reported once
  });

  it('a prefill cut into chunks of columns decodes the same tokens as the one-shot prefill', async () => {
    // 1 column at a time for 3 rows (the widest activation, gate+up, is 80 floats a token): each chunk's keys are in
    // the cache before the next chunk's queries attend to them.
    const greedy = { maxNewTokens: 8, temperature: 0, seed: 0, padTokenId: 0 };
    const oneShot = await generate(model, prompts, greedy);
    const chunked = await generate(model, prompts, { ...greedy, maxActivationBytes: 3 * 80 * 4 });
    expect(chunked.tokens).toEqual(oneShot.tokens);
    expect(new Set(oneShot.tokens.flat()).size).toBeGreaterThan(2);
  });

  it("a decode step's residual adds ride in the o and down matmuls' output pass: no Add kernel, 4 matmuls a layer", async () => {
    // Decode steps are bound by kernel dispatches on a GPU (BENCHMARKS.md, "GPU server"): the two residual adds of a
    // layer are the fused bias of its o and down projections, which is the same float addition.
    const kernelNames = async (n: number) =>
      (
        await tf.profile(async () => {
          await generate(model, prompts, { maxNewTokens: n, temperature: 1, seed: 3, padTokenId: 0 });
        })
      ).kernels.map((k) => k.name);
    const count = (names: string[], name: string) => names.filter((k) => k === name).length;
    const [four, six] = [await kernelNames(4), await kernelNames(6)];
    const layers = config.num_hidden_layers;
    expect(count(six, 'Add') - count(four, 'Add')).toBe(0);
    expect((count(six, '_FusedMatMul') - count(four, '_FusedMatMul')) / 2).toBe(4 * layers); // qkv, o, gateUp, down
  });
});
