// Rollouts at the paper's scale: the members of an env group share their first prompt, and GenerationSession
// prefills it once for the group (copying the cache rows), then every later turn continues from the cache. Checked
// against each row generated alone (its own session: no sharing possible): the same sampled tokens over two turns,
// on wasm and cpu, with the prefill really shared and no tensor left behind.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../src/model/backend';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { GenerationSession, prefillChunkColumns } from '../../../src/model/generate';

const config = TINY_GENERATE_CONFIG;
const opts = { maxNewTokens: 10, temperature: 1, seed: 7, padTokenId: 0, stopTokenIds: [3] };
// Two env groups of three: each group's members start from the same prompt (the group's reset state).
const groupPrompts = [
  [5, 17, 9, 22, 31, 8],
  [9, 1, 44, 23, 8, 8, 30, 2, 12, 40, 41, 6, 7],
];
const keys = [0, 1, 2, 3, 4, 5];
const turn1 = keys.map((k) => groupPrompts[Math.floor(k / 3)]);
/** The second turn's prompt of a row: its first prompt, its answer, and an observation that depends on the row. */
const turn2 = (k: number, answer: number[]) => [...turn1[k], ...answer, 20 + k, 21, 22];

for (const backend of ['wasm', 'cpu'] as const) {
  describe(`shared-prompt prefill on ${backend}`, () => {
    let model: Qwen2Model;
    beforeAll(async () => {
      await initBackend(backend);
      model = new Qwen2Model(config, initQwen2Weights(config, 21));
    });

    it('samples the same tokens as every row alone, over two turns, prefilling each group prompt once', async () => {
      const warm = new GenerationSession(model); // the model's RoPE tables grow once, on first use
      await warm.generate([Array(40).fill(1)], opts);
      warm.dispose();
      const before = tf.memory().numTensors;
      const together = new GenerationSession(model);
      const first = await together.generate(turn1, opts, keys);
      expect(together.stats.prefilledTokens).toBe(groupPrompts[0].length + groupPrompts[1].length);
      expect(together.stats.sharedTokens).toBe(2 * groupPrompts[0].length + 2 * groupPrompts[1].length);
      const second = await together.generate(
        keys.map((k) => turn2(k, first.tokens[k])),
        opts,
        keys,
      );
      expect(together.stats.reusedTokens).toBeGreaterThan(0);
      together.dispose();

      for (const k of keys) {
        const alone = new GenerationSession(model);
        const a1 = await alone.generate([turn1[k]], opts, [k]);
        const a2 = await alone.generate([turn2(k, a1.tokens[0])], opts, [k]);
        alone.dispose();
        expect(a1.tokens[0]).toEqual(first.tokens[k]);
        expect(a2.tokens[0]).toEqual(second.tokens[k]);
      }
      expect(new Set(first.tokens.map((t) => t.join(','))).size).toBeGreaterThan(2); // the members really differ
      expect(tf.memory().numTensors).toBe(before);
    });

    it('rows that begin with the same system prompt: the decode steps read it from row 0 (wasm), the same tokens', async () => {
      const system = [7, 33, 12, 5, 19, 28, 4, 11];
      const prompts = [2, 3, 4, 5].map((k) => [...system, 40 + k, 9, 10 + k]);
      const rowKeys = [10, 11, 12, 13];
      const together = new GenerationSession(model);
      const first = await together.generate(prompts, opts, rowKeys);
      const second = await together.generate(
        prompts.map((p, i) => [...p, ...first.tokens[i], 30, 31 + i]),
        opts,
        rowKeys,
      );
      // wasm reads the system prompt's slots (at least) from row 0 on both turns; elsewhere nothing is read so.
      if (backend === 'wasm') expect(together.stats.alikeSlots).toBeGreaterThanOrEqual(2 * system.length);
      else expect(together.stats.alikeSlots).toBe(0);
      together.dispose();
      for (const [i, k] of rowKeys.entries()) {
        const alone = new GenerationSession(model);
        const a1 = await alone.generate([prompts[i]], opts, [k]);
        const a2 = await alone.generate([[...prompts[i], ...a1.tokens[0], 30, 31 + i]], opts, [k]);
        alone.dispose();
        expect(a1.tokens[0]).toEqual(first.tokens[i]);
        expect(a2.tokens[0]).toEqual(second.tokens[i]);
      }
    });

    it('a prefill cut into chunks of columns (maxActivationBytes) samples exactly what the one-shot prefill does', async () => {
      // Widest activation of this config: gate+up, 2 x 40 floats a token. 3 columns of the 2 group prompts fit in
      // 1,920 bytes; the second turn's 6 rows go 1 column at a time.
      const limit = 3 * 2 * 80 * 4;
      expect(prefillChunkColumns(model, 2, 16, limit)).toBe(3);
      expect(prefillChunkColumns(model, 6, 16, limit)).toBe(1);
      expect(prefillChunkColumns(model, 2, 16, 1e9)).toBe(16);
      const run = async (o: typeof opts & { maxActivationBytes?: number }) => {
        const session = new GenerationSession(model);
        const first = await session.generate(turn1, o, keys);
        const second = await session.generate(
          keys.map((k) => turn2(k, first.tokens[k])),
          o,
          keys,
        );
        session.dispose();
        return [first.tokens, second.tokens];
      };
      const oneShot = await run(opts);
      const before = tf.memory().numTensors;
      expect(await run({ ...opts, maxActivationBytes: limit })).toEqual(oneShot);
      expect(tf.memory().numTensors).toBe(before);
    });
  });
}
