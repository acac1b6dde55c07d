// Continuous batching on webgpu (Dawn in Node; SwiftShader on a machine without a GPU): 2 slots for 3 dialogues of 1
// to 3 turns, greedy, samples read every 4 passes (deferred, as on WebGPU), several stop tokens so that turns end at
// different steps. Each dialogue decodes the tokens it decodes alone with GenerationSession, and no tensor is left.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';
import { ContinuousEngine } from '../../../src/model/continuousBatching';
import { GenerationSession } from '../../../src/model/generate';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';

const config = TINY_GENERATE_CONFIG;
const first = [
  [5, 17, 3, 22],
  [9, 1, 44, 23, 8, 8, 30, 2, 12],
  [4, 4, 19, 36, 2, 7, 7, 21, 11, 40, 3, 15],
];
const turnsOf = (k: number) => 1 + k; // 1, 2, 3 turns
const next = (prompt: number[], k: number, turn: number, answer: number[]) => [...prompt, ...answer, 20 + k, 21 + turn];
const base = { maxNewTokens: 12, temperature: 0, padTokenId: 0, stopTokenIds: [3, 7, 11, 19, 23] };

let model: Qwen2Model;
beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
  model = new Qwen2Model(config, initQwen2Weights(config, 11));
});

describe('continuous batching on webgpu', () => {
  it('2 slots for 3 dialogues decode what each decodes alone, and leave no tensor', async () => {
    expect(tf.getBackend()).toBe('webgpu');
    const alone: number[][][] = [];
    for (let k = 0; k < first.length; k++) {
      const session = new GenerationSession(model);
      let prompt = first[k];
      alone.push([]);
      for (let turn = 1; turn <= turnsOf(k); turn++) {
        const out = await session.generate([prompt], { ...base, seed: turn }, [k]);
        alone[k].push(out.tokens[0]);
        prompt = next(prompt, k, turn, out.tokens[0]);
      }
      session.dispose();
    }
    const before = tf.memory().numTensors;
    const played: number[][][] = first.map(() => []);
    const prompts = [...first];
    const stats = await new ContinuousEngine(model).run(
      first.map((prompt, key) => ({ key, prompt })),
      (key, turn, result) => {
        played[key].push([...result.tokens]);
        if (turn >= turnsOf(key)) return null;
        prompts[key] = next(prompts[key], key, turn, result.tokens);
        return prompts[key];
      },
      { ...base, slots: 2, capacity: 128, seedForTurn: (turn) => turn, readEvery: 4 },
    );
    expect(played).toEqual(alone);
    expect(new Set(alone.flat(2)).size).toBeGreaterThan(3); // not a degenerate repetition
    expect(stats.turns).toBe(6);
    expect(stats.fedTokens).toBeGreaterThan(0); // some prompt text went in next to decoding rows
    expect(tf.memory().numTensors).toBe(before);
  });
});
