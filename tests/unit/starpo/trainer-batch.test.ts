// Training sequences: tokenized segments, RAGEN's shifted loss mask, bucketed padding (src/starpo/batch.ts).
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildPrompt, envRegistry, type HistoryRecord } from '../../../src/agent/index';
import { initBackend } from '../../../src/model/backend';
import {
  bucketLength,
  chunks,
  disposeBatch,
  lossTokenCount,
  padBatch,
  padRows,
  scoreLogProbs,
  tokenizeTrajectory,
  unpadRows,
} from '../../../src/starpo/batch';
import { tinyBanditTokenizer, tinyPolicy } from './trainer-fixture';

beforeAll(async () => {
  await initBackend('cpu');
});

const tokenizer = tinyBanditTokenizer();
const info = envRegistry().promptInfo('Bandit');

/** A finished two-turn history (two turns keep the test about masking, not about Bandit's one-turn rule). */
function history(): HistoryRecord[] {
  return [
    {
      state: 'arms: Phoenix, Dragon',
      actionsLeft: 2,
      actions: ['Dragon'],
      reward: 0.25,
      info: null,
      llmResponse: '<think>I pick Dragon.</think><answer>Dragon</answer>',
      llmRawResponse: '',
    },
    {
      state: 'arms: Phoenix, Dragon',
      actionsLeft: 1,
      actions: ['Phoenix'],
      reward: 0.1,
      info: null,
      llmResponse: '<think>I pick Phoenix.</think><answer>Phoenix</answer>',
      llmRawResponse: '',
    },
    { state: 'done', actionsLeft: 0 },
  ];
}

/** The decoded text of the targets ids[t + 1] whose mask is on, as runs of consecutive targets. */
function maskedRuns(ids: number[], mask: Uint8Array): string[] {
  const runs: string[] = [];
  let current: number[] = [];
  for (let t = 0; t < mask.length; t++) {
    if (mask[t]) current.push(ids[t + 1]);
    else if (current.length) {
      runs.push(tokenizer.decode(current));
      current = [];
    }
  }
  if (current.length) runs.push(tokenizer.decode(current));
  return runs;
}

describe('tokenizeTrajectory', () => {
  it('equals tokenizing the whole text, and trains on exactly the assistant turns shifted by one (response mask)', () => {
    const rendered = buildPrompt(info, history(), { style: 'compact', mode: 'training' });
    const t = tokenizeTrajectory(tokenizer, rendered);
    expect(t.ids).toEqual(tokenizer.encode(rendered.text));
    expect(t.lossMask.length).toBe(t.ids.length - 1);
    // RAGEN: the model learns to predict "assistant\n", the response, <|im_end|>, "\n" and the NEXT <|im_start|>.
    const assistant = rendered.segments
      .filter((s) => s.role === 'assistant')
      .map((s) => s.text.slice('<|im_start|>'.length));
    expect(maskedRuns(t.ids, t.lossMask)).toEqual([assistant[0] + '<|im_start|>', assistant[1]]);
    expect(lossTokenCount(t)).toBe(t.lossMask.reduce((a, b) => a + b, 0));
  });

  it("with the paper's mask (responseMaskOnly false) trains on everything after the system prompt", () => {
    const rendered = buildPrompt(info, history(), { style: 'compact', mode: 'training', responseMaskOnly: false });
    const t = tokenizeTrajectory(tokenizer, rendered);
    const system = rendered.segments[0].text;
    expect(maskedRuns(t.ids, t.lossMask)).toEqual([rendered.text.slice(system.length + '<|im_start|>'.length)]);
  });
});

describe('padding and rows', () => {
  it('buckets lengths to multiples of 32 up to 256, then of 128, where shapes compile; else to multiples of 8', () => {
    const lengths = [1, 32, 33, 200, 256, 257, 400];
    expect(lengths.map((n) => bucketLength(n, true))).toEqual([32, 32, 64, 224, 256, 384, 512]);
    expect(lengths.map((n) => bucketLength(n, false))).toEqual([8, 32, 40, 200, 256, 264, 400]);
    expect(tf.getBackend()).toBe('cpu');
    expect(bucketLength(33)).toBe(40);
    expect(() => bucketLength(0)).toThrow(/positive integer/);
    expect(() => bucketLength(0, false)).toThrow(/positive integer/);
  });

  it('right-pads a batch: ids, attention and loss mask line up, padding is masked out', async () => {
    const a = { ids: [5, 6, 7], lossMask: Uint8Array.from([0, 1]) };
    const b = { ids: [8, 9, 10, 11, 12], lossMask: Uint8Array.from([1, 0, 1, 1]) };
    const batch = padBatch([a, b], 0, true);
    expect(batch.length).toBe(32);
    expect(batch.ids.shape).toEqual([2, 32]);
    expect(batch.lossMask.shape).toEqual([2, 31]);
    const ids = await batch.ids.array();
    const attention = await batch.attention.array();
    const mask = await batch.lossMask.array();
    expect(ids[0].slice(0, 4)).toEqual([5, 6, 7, 0]);
    expect(attention[0].slice(0, 4)).toEqual([1, 1, 1, 0]);
    expect(attention[1].reduce((s, x) => s + x, 0)).toBe(5);
    expect(mask[1].slice(0, 5)).toEqual([1, 0, 1, 1, 0]);
    expect(mask[0].reduce((s, x) => s + x, 0)).toBe(1);
    // Scoring starts its LM head at the first loss target of any row: b's, 0; a's is 1.
    expect(batch.firstLossTarget).toBe(0);
    disposeBatch(batch);
    const later = padBatch([a, { ids: [8, 9, 10, 11], lossMask: Uint8Array.from([0, 0, 1]) }], 0);
    expect(later.firstLossTarget).toBe(1);
    disposeBatch(later);
    const none = padBatch([{ ids: [8, 9, 10], lossMask: Uint8Array.from([0, 0]) }], 0);
    expect(none.firstLossTarget).toBe(0);
    disposeBatch(none);
  });

  it('padRows / unpadRows round-trip rows of different lengths', async () => {
    const before = tf.memory().numTensors;
    const rows = [Float32Array.from([1, 2]), Float32Array.from([3, 4, 5])];
    const t = padRows(rows, 4);
    expect(await t.array()).toEqual([
      [1, 2, 0, 0],
      [3, 4, 5, 0],
    ]);
    expect(await unpadRows(t, [2, 3])).toEqual(rows);
    t.dispose();
    expect(() => padRows([Float32Array.from([1, 2, 3])], 2)).toThrow(/more than the width/);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('chunks indices in order', () => {
    expect(chunks([0, 1, 2, 3, 4], 2)).toEqual([[0, 1], [2, 3], [4]]);
    expect(() => chunks([0], 0)).toThrow(/positive integer/);
  });
});

describe('scoreLogProbs', () => {
  it('scores at the given temperature: log softmax(logits / T) of each next token, as veRL scores at the rollout temperature', async () => {
    const { model } = tinyPolicy();
    const seqs = [
      { ids: [3, 9, 4, 7, 2], lossMask: Uint8Array.from([0, 1, 1, 1]) },
      { ids: [5, 6, 8], lossMask: Uint8Array.from([1, 1]) },
    ];
    const logits = (await tf
      .tidy(() => model.forward(tf.tensor2d([seqs[0].ids], [1, 5], 'int32')))
      .array()) as number[][][];
    const expected = (temperature: number) =>
      seqs[0].ids.slice(1).map((next, t) => {
        const z = logits[0][t].map((x) => x / temperature);
        const max = Math.max(...z);
        return z[next] - max - Math.log(z.reduce((s, x) => s + Math.exp(x - max), 0));
      });
    for (const temperature of [1, 0.5]) {
      const { logProbs } = await scoreLogProbs(model, seqs, [[0, 1]], 0, undefined, temperature);
      expect(logProbs.map((r) => r.length)).toEqual([4, 2]);
      const want = expected(temperature);
      Array.from(logProbs[0]).forEach((lp, t) => expect(lp, `T=${temperature}, t=${t}`).toBeCloseTo(want[t], 4));
    }
    model.dispose();
  });
});
