// Batched KV-cache generation on wasm: token-exact agreement with full-sequence greedy decoding, stop tokens and
// stop strings, per-turn token limit, seeded sampling, and input checks.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../src/model/backend';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { fullSequenceGreedy } from './greedy-reference';
import {
  CACHE_BUCKET,
  GenerationSession,
  PROMPT_BUCKET,
  generate,
  type GenerateOptions,
} from '../../../src/model/generate';
import { sampleNextTokens } from '../../../src/model/sampling';
import { seededUniform } from '../../../src/model/seeded';

const config = TINY_GENERATE_CONFIG;
const PAD = 0;
const greedy = (maxNewTokens: number, extra: Partial<GenerateOptions> = {}): GenerateOptions => ({
  maxNewTokens,
  temperature: 0,
  seed: 0,
  padTokenId: PAD,
  ...extra,
});

let model: Qwen2Model;
beforeAll(async () => {
  await initBackend('wasm');
  model = new Qwen2Model(config, initQwen2Weights(config, 11));
});

const prompts = [
  [5, 17, 3],
  [9, 1, 44, 23, 8, 8, 30, 2, 12],
  [4, 4, 19, 36, 2, 7, 7, 21, 11, 40, 3, 15, 28, 6, 1, 33, 9],
];

describe('generate', () => {
  it('produces exactly the tokens of full-sequence greedy decoding, for a left-padded batch', async () => {
    // 17-token prompt -> prompt bucket 32; 40 new tokens cross into a second cache bucket (capacity 128).
    expect(PROMPT_BUCKET).toBe(16);
    expect(CACHE_BUCKET).toBe(64);
    const steps = 40;
    const out = await generate(model, prompts, greedy(steps));
    for (let i = 0; i < prompts.length; i++) {
      const expected = await fullSequenceGreedy(model, prompts[i], steps);
      expect(new Set(expected).size).toBeGreaterThan(3); // not a degenerate repetition
      expect(out.tokens[i]).toEqual(expected);
      expect(out.finishReasons[i]).toBe('length');
    }
    // and a row alone gets the same tokens as in the batch
    const alone = await generate(model, [prompts[1]], greedy(steps));
    expect(alone.tokens[0]).toEqual(out.tokens[1]);
  });

  it('stops a row at a stop token (included) while the others continue unaffected', async () => {
    const free = await generate(model, prompts, greedy(12));
    const stopAt = 4;
    const stopId = free.tokens[0][stopAt];
    const firstIndex = free.tokens[0].indexOf(stopId);
    const out = await generate(model, prompts, greedy(12, { stopTokenIds: [stopId] }));
    expect(out.tokens[0]).toEqual(free.tokens[0].slice(0, firstIndex + 1));
    expect(out.finishReasons[0]).toBe('stop');
    for (const r of [1, 2]) {
      const i = free.tokens[r].indexOf(stopId);
      expect(out.tokens[r]).toEqual(i < 0 ? free.tokens[r] : free.tokens[r].slice(0, i + 1));
      expect(out.finishReasons[r]).toBe(i < 0 ? 'length' : 'stop');
    }
  });

  it('stops once the decoded new text contains a stop string', async () => {
    const decode = (ids: number[]) => ids.map((id) => String.fromCharCode(65 + (id % 26))).join('');
    const free = await generate(model, [prompts[2]], greedy(12));
    const text = decode(free.tokens[0]);
    const stop = text.slice(5, 7); // ends in the 7th new token (or earlier, if it appears before)
    const end = text.indexOf(stop) + stop.length;
    const out = await generate(model, [prompts[2]], greedy(12, { stopStrings: [stop], decode }));
    expect(out.tokens[0]).toEqual(free.tokens[0].slice(0, end));
    expect(decode(out.tokens[0]).endsWith(stop)).toBe(true);
    expect(out.finishReasons[0]).toBe('stop');
  });

  it('respects the per-turn token limit', async () => {
    const out = await generate(model, prompts, greedy(3));
    expect(out.tokens.map((t) => t.length)).toEqual([3, 3, 3]);
    const none = await generate(model, prompts, greedy(0));
    expect(none.tokens).toEqual([[], [], []]);
  });

  it('samples deterministically from the seed', async () => {
    const opts = (seed: number): GenerateOptions => ({ maxNewTokens: 30, temperature: 1, seed, padTokenId: PAD });
    const a = await generate(model, prompts, opts(1));
    const b = await generate(model, prompts, opts(1));
    const c = await generate(model, prompts, opts(2));
    expect(b.tokens).toEqual(a.tokens);
    expect(c.tokens).not.toEqual(a.tokens);
    const greedyOut = await generate(model, prompts, greedy(30));
    expect(a.tokens).not.toEqual(greedyOut.tokens);
    // top-k 1 and a tiny top-p both reduce to greedy
    expect((await generate(model, prompts, { ...opts(3), topK: 1 })).tokens).toEqual(greedyOut.tokens);
    expect((await generate(model, prompts, { ...opts(3), topP: 1e-6 })).tokens).toEqual(greedyOut.tokens);
  });

  it('leaves no tensors behind', async () => {
    await generate(model, prompts, greedy(5));
    const before = tf.memory().numTensors;
    await generate(model, prompts, { maxNewTokens: 20, temperature: 0.7, topP: 0.9, seed: 5, padTokenId: PAD });
    await generate(model, prompts, greedy(20, { stopTokenIds: [1, 2, 3] }));
    expect(tf.memory().numTensors).toBe(before);
  });

  it('reading the sampled ids back every k steps gives the same tokens as every step', async () => {
    const decode = (ids: number[]) => ids.map((id) => String.fromCharCode(65 + (id % 26))).join('');
    const free = await generate(model, prompts, greedy(20, { readEvery: 1 }));
    const stopId = free.tokens[1][6]; // row 1 stops mid-way between two reads
    const stop = decode(free.tokens[2]).slice(9, 11); // row 2 stops on a string
    const cases: Partial<GenerateOptions>[] = [
      {},
      { stopTokenIds: [stopId] },
      { stopTokenIds: [stopId], stopStrings: [stop], decode },
      { temperature: 1, seed: 7 },
      { temperature: 0.7, seed: 7, topP: 0.9 }, // finishes on the CPU: read every step regardless
    ];
    for (const extra of cases) {
      const every = await generate(model, prompts, greedy(20, { ...extra, readEvery: 1 }));
      const before = tf.memory().numTensors;
      for (const k of [3, 8, 64]) {
        const batched = await generate(model, prompts, greedy(20, { ...extra, readEvery: k }));
        expect(batched).toEqual(every);
      }
      expect(tf.memory().numTensors).toBe(before);
    }
    const stopped = await generate(model, prompts, greedy(20, { stopTokenIds: [stopId], readEvery: 8 }));
    expect(stopped.finishReasons[1]).toBe('stop'); // the case above really stopped a row between reads
    expect(stopped.tokens[1].length).toBeLessThan(20);
    await expect(generate(model, [[1]], greedy(3, { readEvery: 0 }))).rejects.toThrow(/readEvery/);
  });

  it('rejects bad input with a clear error', async () => {
    await expect(generate(model, [], greedy(3))).rejects.toThrow(/no prompts/);
    await expect(generate(model, [[1]], greedy(3, { maxActivationBytes: Number.NaN }))).rejects.toThrow(
      /maxActivationBytes must be a positive number of bytes, got NaN/,
    );
    await expect(generate(model, [[1]], greedy(3, { maxActivationBytes: 0 }))).rejects.toThrow(/maxActivationBytes/);
    await expect(generate(model, [[1], []], greedy(3))).rejects.toThrow(/prompt 1 is empty/);
    await expect(generate(model, [[1, 50]], greedy(3))).rejects.toThrow(/token id 50 outside the vocabulary/);
    await expect(generate(model, [[1]], greedy(3, { stopStrings: ['x'] }))).rejects.toThrow(/decode/);
    await expect(generate(model, [[1]], greedy(3, { temperature: -1 }))).rejects.toThrow(/temperature/);
    await expect(generate(model, [[1]], greedy(3, { temperature: 1e-45 }))).rejects.toThrow(
      /temperature must be 0 \(greedy\) or a finite number >= 0\.001, got 1e-45/,
    );
    await expect(generate(model, [[1]], greedy(3, { topP: 0 }))).rejects.toThrow(/topP/);
    await expect(generate(model, [[1]], greedy(-1))).rejects.toThrow(/maxNewTokens/);
    // Past the model's 256 positions: refused up front (as vLLM refuses a prompt past max_model_len).
    await expect(generate(model, [[1], Array(250).fill(3)], greedy(7))).rejects.toThrow(
      "generate: a prompt of 250 tokens plus up to 7 new tokens needs more than the model's 256 positions (max_position_embeddings)",
    );
    expect((await generate(model, [Array(250).fill(3)], greedy(6))).tokens[0]).toHaveLength(6);
  });
});

describe('sampleNextTokens', () => {
  it('draws tokens with the softmax(logits / temperature) frequencies', async () => {
    const logits = [2, 1, 0, -1, 0.5];
    const rows = 4000,
      temperature = 0.8;
    const random = seededUniform(42);
    const batch = tf.tensor2d(Array.from({ length: rows }, () => logits));
    const drawn = await sampleNextTokens(batch, { temperature }, Array.from({ length: rows }, random));
    batch.dispose();
    const weights = logits.map((l) => Math.exp(l / temperature));
    const total = weights.reduce((a, b) => a + b, 0);
    weights.forEach((w, id) => {
      const p = w / total;
      const freq = drawn.filter((d) => d === id).length / rows;
      expect(Math.abs(freq - p)).toBeLessThan(4 * Math.sqrt((p * (1 - p)) / rows)); // 4 standard errors
    });
  });

  it('top-p keeps the smallest set of best tokens reaching p, top-k the k best', async () => {
    // probabilities ~ [0.5, 0.3, 0.2] (log-space logits): top-p 0.6 keeps tokens 0 and 1 only
    const logits = tf.tensor2d([Array.from({ length: 3 }, (_, i) => Math.log([0.5, 0.3, 0.2][i]))]);
    const seen = new Set<number>();
    const random = seededUniform(1);
    for (let i = 0; i < 200; i++)
      seen.add((await sampleNextTokens(logits, { temperature: 1, topP: 0.6 }, [random()]))[0]);
    expect([...seen].sort()).toEqual([0, 1]);
    seen.clear();
    for (let i = 0; i < 200; i++)
      seen.add((await sampleNextTokens(logits, { temperature: 1, topK: 2 }, [random()]))[0]);
    expect([...seen].sort()).toEqual([0, 1]);
    logits.dispose();
  });

  it('a session continues each row from its cache: three turns give the tokens of full-sequence greedy decoding', async () => {
    const session = new GenerationSession(model);
    try {
      let turn = prompts.map((p) => [...p]);
      let keys = [7, 8, 9];
      for (let t = 0; t < 3; t++) {
        const out = await session.generate(turn, greedy(6, { stopTokenIds: [13] }), keys);
        for (let i = 0; i < turn.length; i++)
          expect(out.tokens[i]).toEqual(await fullSequenceGreedy(model, turn[i], out.tokens[i].length));
        // The next turn: the dialogue so far plus a "reply" of new tokens. Row 8 drops out after turn 1; row 7 gets
        // its history edited (a different token inside its previous answer: only the prefix before it is reused);
        // a new row 10 joins with no cache.
        const next = turn.map((p, i) => [...p, ...out.tokens[i], 3, 14 + t, 22]);
        if (t === 0) {
          next[0][prompts[0].length + 1] = 49;
          turn = [next[0], next[2], [12, 31, 5, 5]];
          keys = [7, 9, 10];
        } else {
          turn = next;
        }
      }
      expect(session.stats.reusedTokens).toBeGreaterThan(session.stats.prefilledTokens);
    } finally {
      session.dispose();
    }
  });

  it('a session without keys, or after dispose, starts from an empty cache and leaks no tensors', async () => {
    const before = tf.memory().numTensors;
    const session = new GenerationSession(model);
    await session.generate(prompts, greedy(4));
    await session.generate(prompts, greedy(4));
    expect(session.stats.reusedTokens).toBe(0);
    session.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('samples each row from its own stream (keyed like the cache): splitting a batch changes no token', async () => {
    const opts = { maxNewTokens: 12, temperature: 1, seed: 99, padTokenId: PAD };
    const together = new GenerationSession(model),
      apart = [new GenerationSession(model), new GenerationSession(model)];
    try {
      const all = await together.generate(prompts, opts, [4, 5, 6]);
      const first = await apart[0].generate([prompts[0], prompts[2]], opts, [4, 6]);
      const second = await apart[1].generate([prompts[1]], opts, [5]);
      expect([first.tokens[0], second.tokens[0], first.tokens[1]]).toEqual(all.tokens);
      expect(new Set(all.tokens.flat()).size).toBeGreaterThan(5); // really sampled, not a constant
    } finally {
      [together, ...apart].forEach((s) => s.dispose());
    }
  });
});
