// Continuous batching (src/model/continuousBatching.ts): dialogues of 1 to 3 turns played in fewer batch rows than
// dialogues, each turn's next prompt handed back as soon as the turn ends. Checked against each dialogue generated
// alone, turn by turn, with its own GenerationSession and the same seeds: the same tokens bit for bit, sampled and
// greedy, on wasm and cpu; the cache allocated once per run; freed rows reused; no tensor left behind, also when
// the run is stopped.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../src/model/backend';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { GenerationSession } from '../../../src/model/generate';
import {
  ContinuousEngine,
  continuousCapacity,
  type ContinuousOptions,
  type EngineTurn,
} from '../../../src/model/continuousBatching';
import { mixSeed } from '../../../src/model/seeded';

const config = TINY_GENERATE_CONFIG;
// Two env groups of three: each group's members start from the same prompt.
const groupPrompts = [
  [5, 17, 9, 22, 31, 8],
  [9, 1, 44, 23, 8, 8, 30, 2, 12, 40, 41, 6, 7],
];
const keys = [10, 11, 12, 13, 14, 15];
const firstPrompt = (k: number) => groupPrompts[Math.floor((k - 10) / 3)];
const turnsOf = (k: number) => 1 + (k % 3); // 1, 2 or 3 turns
/** The next prompt: the dialogue so far, the answer, and an observation that depends on the dialogue and turn. */
const nextPrompt = (prompt: number[], k: number, turn: number, answer: number[]) => [
  ...prompt,
  ...answer,
  20 + k - 10,
  21 + turn,
  22,
];
const seedForTurn = (turn: number) => mixSeed(7, turn);
// Several stop tokens: turns end at different steps, so some rows decode while others are fed their next prompt.
const base = { maxNewTokens: 10, padTokenId: 0, stopTokenIds: [3, 7, 11, 19, 23] };

/** Every dialogue alone, turn by turn, with GenerationSession: its tokens per turn. */
async function alone(
  model: Qwen2Model,
  sampling: { temperature: number; topK?: number; topP?: number },
): Promise<Map<number, number[][]>> {
  const out = new Map<number, number[][]>();
  for (const k of keys) {
    const session = new GenerationSession(model);
    const turns: number[][] = [];
    let prompt = firstPrompt(k);
    for (let turn = 1; turn <= turnsOf(k); turn++) {
      const r = await session.generate([prompt], { ...base, ...sampling, seed: seedForTurn(turn) }, [k]);
      turns.push(r.tokens[0]);
      prompt = nextPrompt(prompt, k, turn, r.tokens[0]);
    }
    session.dispose();
    out.set(k, turns);
  }
  return out;
}

/** The dialogues through the engine: their tokens per turn, and the run's stats. */
async function together(model: Qwen2Model, o: Partial<ContinuousOptions> & { temperature: number }) {
  const played = new Map<number, number[][]>(keys.map((k) => [k, []]));
  const prompts = new Map<number, number[]>(keys.map((k) => [k, firstPrompt(k)]));
  const onTurnEnd = (key: number, turn: number, result: EngineTurn) => {
    played.get(key)!.push([...result.tokens]);
    expect(played.get(key)!.length).toBe(turn);
    if (turn >= turnsOf(key)) return null;
    const next = nextPrompt(prompts.get(key)!, key, turn, result.tokens);
    prompts.set(key, next);
    return next;
  };
  const stats = await new ContinuousEngine(model).run(
    keys.map((key) => ({ key, prompt: firstPrompt(key) })),
    onTurnEnd,
    { ...base, slots: 2, capacity: continuousCapacity(model, 13, 3, base.maxNewTokens, 8), seedForTurn, ...o },
  );
  return { played, stats };
}

for (const backend of ['wasm', 'cpu'] as const) {
  describe(`continuous batching on ${backend}`, () => {
    let model: Qwen2Model;
    beforeAll(async () => {
      await initBackend(backend);
      model = new Qwen2Model(config, initQwen2Weights(config, 21));
      const warm = new GenerationSession(model); // the model's RoPE tables grow once, on first use
      await warm.generate([Array(60).fill(1)], { ...base, temperature: 1, seed: 1 });
      warm.dispose();
    });

    for (const temperature of [1, 0]) {
      it(`2 slots for 6 dialogues sample what each dialogue samples alone (temperature ${temperature})`, async () => {
        const expected = await alone(model, { temperature });
        const before = tf.memory().numTensors;
        const { played, stats } = await together(model, { temperature });
        for (const k of keys) expect(played.get(k)).toEqual(expected.get(k));
        expect(stats.turns).toBe(keys.reduce((n, k) => n + turnsOf(k), 0));
        // The first two dialogues (one group) share one prefill. Later prompts go in passes when every row's turn
        // ended at the same step, else one token a step next to the rows still decoding.
        expect(stats.sharedTokens).toBe(groupPrompts[0].length);
        expect(stats.prefilledTokens).toBeGreaterThan(groupPrompts[0].length);
        expect(stats.passes).toBeGreaterThan(1);
        expect(stats.fedTokens).toBeGreaterThan(0);
        expect(stats.reusedTokens).toBeGreaterThan(0);
        // Fewer slots than dialogues: the rows' columns run out and are compacted into a cache of the same size.
        expect(stats.compactions).toBeGreaterThan(0);
        expect(stats.cacheAllocations).toBe(1 + stats.compactions);
        expect(stats.capacity).toBe(continuousCapacity(model, 13, 3, base.maxNewTokens, 8));
        if (temperature === 1) {
          const firstTurns = new Set(keys.map((k) => played.get(k)![0].join(',')));
          expect(firstTurns.size).toBeGreaterThan(2); // the members of a group really differ
        }
        expect(tf.memory().numTensors).toBe(before);
      });
    }

    it('as many slots as dialogues: every first prompt prefilled (once per group), the same tokens', async () => {
      const expected = await alone(model, { temperature: 1 });
      const { played, stats } = await together(model, { temperature: 1, slots: 6 });
      for (const k of keys) expect(played.get(k)).toEqual(expected.get(k));
      expect(stats.prefilledTokens).toBeGreaterThanOrEqual(groupPrompts[0].length + groupPrompts[1].length);
      expect(stats.sharedTokens).toBe(2 * groupPrompts[0].length + 2 * groupPrompts[1].length);
      expect(stats.fedTokens).toBeGreaterThan(0);
      // A slot per dialogue and a capacity from the format's limits: the cache is allocated once, never compacted;
      // once half the dialogues are over, their rows leave the batch.
      expect(stats.cacheAllocations).toBe(1);
      expect(stats.compactions).toBe(0);
      expect(stats.shrinks).toBeGreaterThan(0);
      expect(stats.rows).toBeLessThanOrEqual(3);
    });

    it("samples read every 8 passes (WebGPU's default): the same tokens, turns seen late", async () => {
      const expected = await alone(model, { temperature: 1 });
      for (const slots of [2, 6]) {
        const { played, stats } = await together(model, { temperature: 1, slots, readEvery: 8 });
        for (const k of keys) expect(played.get(k)).toEqual(expected.get(k));
        expect(stats.fedTokens).toBeGreaterThan(0);
      }
    });

    it('top-k and top-p (finished on the host, read every pass): the same tokens as alone', async () => {
      const o = { temperature: 1, topK: 8, topP: 0.9 };
      const expected = await alone(model, o);
      const { played } = await together(model, { ...o, slots: 2, readEvery: 8 });
      for (const k of keys) expect(played.get(k)).toEqual(expected.get(k));
    });

    it('a cache too small for the run is compacted, and the tokens stay the same', async () => {
      const expected = await alone(model, { temperature: 1 });
      const { played, stats } = await together(model, { temperature: 1, slots: 3, capacity: 64 });
      for (const k of keys) expect(played.get(k)).toEqual(expected.get(k));
      expect(stats.compactions).toBeGreaterThan(0);
      expect(stats.cacheAllocations).toBe(1 + stats.compactions);
      expect(stats.capacity).toBe(64);
    });

    it('the same run twice: the same tokens, and the tensor count flat', async () => {
      const a = await together(model, { temperature: 1 });
      const before = tf.memory().numTensors;
      const b = await together(model, { temperature: 1 });
      expect(tf.memory().numTensors).toBe(before);
      expect([...b.played]).toEqual([...a.played]);
    });

    it('a throw from onStep (Stop) abandons the run and frees every tensor', async () => {
      const before = tf.memory().numTensors;
      const stop = new Error('stopped');
      let steps = 0;
      await expect(
        together(model, {
          temperature: 1,
          readEvery: 8, // samples left unread on the device are freed too
          onStep: () => {
            if (++steps === 5) throw stop;
          },
        }),
      ).rejects.toBe(stop);
      expect(steps).toBe(5);
      expect(tf.memory().numTensors).toBe(before);
    });
  });
}
