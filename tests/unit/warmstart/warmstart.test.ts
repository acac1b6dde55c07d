// The warm-start pipeline: tokenizer coverage, loss masking, the SFT loss and its decrease, batching, recipes.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { tokenLogProbs } from '../../../src/model/scoring';
import { generateDemonstrations } from '../../../src/warmstart/demonstrations';
import { presetConfig } from '../../../src/starpo/presets';
import {
  WARMSTART_RECIPES,
  LENGTH_BUCKET,
  batchStream,
  buildWarmStart,
  buildWarmStartTokenizer,
  collate,
  learningRate,
  sftLoss,
  tinyQwen2Config,
  tokenizeRendered,
  trainSft,
  warmStartRecipeName,
  warmStartRunConfig,
  warmStartTags,
} from '../../../src/warmstart/warmstart';

const demos = generateDemonstrations({
  tag: 'SimpleSokoban',
  episodes: 12,
  maxTurn: 3,
  maxActionsPerTurn: 5,
  imperfectFraction: 0.25,
  actionsPerAnswer: [2, 5],
});
const tokenizer = buildWarmStartTokenizer(demos, ['SimpleSokoban'], 400);
const examples = demos.map((d) => tokenizeRendered(tokenizer, d.training));
const smallShape = {
  hiddenSize: 32,
  numLayers: 1,
  numHeads: 4,
  numKvHeads: 2,
  intermediateSize: 64,
  ropeTheta: 10000,
  maxPositions: 512,
};

beforeAll(async () => {
  await initBackend('wasm');
});

describe('warm start: tokenizer and loss mask', () => {
  it('tokenizes a training text segment by segment exactly as a whole, and trains only on the responses', () => {
    for (const demo of demos) {
      const { ids, targetMask } = tokenizeRendered(tokenizer, demo.training);
      expect(ids).toEqual(tokenizer.encode(demo.training.text));
      expect(targetMask).toHaveLength(ids.length - 1);
      // The trained targets, decoded, are the assistant turns minus their very first token (`<|im_start|>`, which
      // is predicted from the previous segment's last position only when that position is trainable: never here)
      // plus, for every assistant turn but the last, the next segment's `<|im_start|>`.
      const trained = ids.slice(1).filter((_, i) => targetMask[i]);
      const assistantTexts = demo.training.segments.filter((s) => s.trainable).map((s) => s.text);
      const expected = assistantTexts.map(
        (t, i) => t.slice('<|im_start|>'.length) + (i < assistantTexts.length - 1 ? '<|im_start|>' : ''),
      );
      expect(tokenizer.decode(trained)).toBe(expected.join(''));
    }
  });

  it('covers the prompt text of every tag it may meet, e.g. BanditTest arm names as whole tokens', () => {
    const config = presetConfig('bandit-tiny');
    const tags = warmStartTags(config);
    expect(tags).toEqual(['Bandit', 'BanditTest']);
    const banditDemos = generateDemonstrations({
      tag: 'Bandit',
      episodes: 20,
      maxTurn: 1,
      maxActionsPerTurn: 1,
      imperfectFraction: 0.5,
    });
    const tok = buildWarmStartTokenizer(banditDemos, tags, 1024);
    // Neither name occurs in a Bandit demonstration: they come from the BanditTest prompts added to the corpus.
    expect(tok.encode(' Librarian')).toHaveLength(1);
    expect(tok.encode(' Trader')).toHaveLength(1);
    expect(warmStartTags(presetConfig('sokoban-tiny'))).toEqual([
      'SimpleSokoban',
      'LargerSokoban',
      'SokobanDifferentGridVocab',
    ]);
  });
});

describe('warm start: SFT', () => {
  it('the SFT loss is the masked token mean of -log p from the full-sequence scorer', async () => {
    const config = tinyQwen2Config(smallShape, tokenizer.vocabSize);
    const model = new Qwen2Model(config, initQwen2Weights({ ...config, initializer_range: 0.3 }, 3));
    const batch = collate(examples.slice(0, 3), tokenizer.padTokenId!);
    expect(batch.ids.shape[1] % LENGTH_BUCKET).toBe(0);
    const loss = sftLoss(model, batch);
    // Reference: every position scored, then the loss mask applied.
    const reference = tf.tidy(() => {
      const mask = tf.tensor2d(
        examples
          .slice(0, 3)
          .map((e) => [...e.targetMask.map(Number), ...Array(batch.ids.shape[1] - 1 - e.targetMask.length).fill(0)]),
      );
      const { logProbs } = tokenLogProbs(model, batch.ids, batch.attention);
      return tf.neg(logProbs.mul(mask).sum().div(mask.sum()));
    });
    expect((await loss.data())[0]).toBeCloseTo((await reference.data())[0], 4);
    tf.dispose([loss, reference, batch.ids, batch.attention, batch.positions, batch.targets]);
    model.dispose();
  });

  it('decreases the loss over a few steps on a tiny set, without leaking tensors', async () => {
    const config = tinyQwen2Config(smallShape, tokenizer.vocabSize);
    const model = new Qwen2Model(config, initQwen2Weights(config, 1));
    // The model keeps RoPE tables sized to the longest sequence seen so far: build them before counting tensors.
    const longest = collate([examples.slice(0, 8).reduce((a, b) => (a.ids.length >= b.ids.length ? a : b))], 0);
    tf.tidy(() => model.forward(longest.ids, longest.attention));
    tf.dispose([longest.ids, longest.attention, longest.positions, longest.targets]);
    const before = tf.memory().numTensors;
    const losses = await trainSft(model, examples.slice(0, 8), tokenizer.padTokenId!, {
      steps: 25,
      batchSize: 4,
      lr: 1e-2,
      warmupSteps: 3,
      seed: 0,
    });
    expect(tf.memory().numTensors).toBe(before);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    // Uniform guessing over the vocabulary costs ln(V) ≈ 6; a memorising model goes far below.
    expect(losses[0]).toBeGreaterThan(Math.log(tokenizer.vocabSize) - 0.5);
    expect(mean(losses.slice(-5))).toBeLessThan(0.6 * mean(losses.slice(0, 5)));
    model.dispose();
  });

  it('refuses sequences longer than the model and empty loss masks', async () => {
    const config = tinyQwen2Config({ ...smallShape, maxPositions: 64 }, tokenizer.vocabSize);
    const model = new Qwen2Model(config, initQwen2Weights(config, 1));
    await expect(
      trainSft(model, examples, 0, { steps: 1, batchSize: 2, lr: 1e-3, warmupSteps: 0, seed: 0 }),
    ).rejects.toThrow(/64 positions/);
    const noTarget = { ids: [1, 2, 3], targetMask: [false, false] };
    await expect(
      trainSft(model, [noTarget], 0, { steps: 1, batchSize: 1, lr: 1e-3, warmupSteps: 0, seed: 0 }),
    ).rejects.toThrow(/loss mask/);
    model.dispose();
  });
});

describe('warm start: batching and schedule', () => {
  it('each epoch covers every example once, in batches of one length bucket, in a seeded order', () => {
    const fake = Array.from({ length: 23 }, (_, i) => ({ ids: Array(10 + 7 * i).fill(i), targetMask: [true] }));
    const epoch = (seed: number) => {
      const stream = batchStream(fake, 4, seed);
      const batches: (typeof fake)[] = [];
      let seen = 0;
      while (seen < fake.length) {
        const b = stream.next().value!;
        batches.push(b);
        seen += b.length;
      }
      return batches;
    };
    const batches = epoch(5);
    expect(
      batches
        .flat()
        .map((e) => e.ids[0])
        .sort((a, b) => a - b),
    ).toEqual(fake.map((_, i) => i));
    for (const b of batches) {
      expect(b.length).toBeLessThanOrEqual(4);
      expect(new Set(b.map((e) => Math.ceil(e.ids.length / LENGTH_BUCKET))).size).toBe(1);
    }
    expect(epoch(5)).toEqual(batches);
    expect(epoch(6)).not.toEqual(batches);
  });

  it('warms up linearly, then decays to a tenth of the peak', () => {
    const opts = { steps: 100, lr: 1e-3, warmupSteps: 10 };
    expect(learningRate(0, opts)).toBeCloseTo(1e-4, 12);
    expect(learningRate(9, opts)).toBeCloseTo(1e-3, 12);
    expect(learningRate(100, opts)).toBeCloseTo(1e-4, 12);
    for (let s = 10; s < 100; s++) expect(learningRate(s + 1, opts)).toBeLessThanOrEqual(learningRate(s, opts));
  });
});

describe('warm start: the whole pipeline', () => {
  it('is deterministic given the recipe and backend', async () => {
    const build = () => buildWarmStart('bandit-tiny', { recipe: { episodes: 24, steps: 2 } });
    const [a, b] = [await build(), await build()];
    expect(b.losses).toEqual(a.losses);
    expect(JSON.stringify(b.tokenizer.toJSON())).toBe(JSON.stringify(a.tokenizer.toJSON()));
    for (const [name, variable] of Object.entries(a.model.variables)) {
      expect(Array.from(await b.model.variables[name].data())).toEqual(Array.from(await variable.data()));
    }
    expect(a.demonstrations.episodes).toBe(24);
    a.model.dispose();
    b.model.dispose();
  });

  it('runs later cycles after the first, which they leave as it was, each on demonstrations of its own seeds', async () => {
    const weights = async (model: { variables: Record<string, { data(): Promise<unknown> }> }) =>
      Object.fromEntries(
        await Promise.all(
          Object.entries(model.variables).map(async ([k, v]) => [k, Array.from((await v.data()) as Float32Array)]),
        ),
      );
    const one = await buildWarmStart('bandit-tiny', { recipe: { episodes: 24, steps: 2 } });
    const afterFirstCycle: Record<string, number[]>[] = [];
    const steps: string[] = [];
    const two = await buildWarmStart('bandit-tiny', {
      recipe: {
        episodes: 24,
        steps: 2,
        laterCycles: [
          { episodes: 16, imperfectFraction: 1, steps: 3, lr: 1e-3, warmupSteps: 1, seed: 9 },
          { episodes: 8, imperfectFraction: 0, steps: 1, lr: 1e-3, warmupSteps: 1, seed: 7 },
        ],
      },
      onStep: (step, total) => void steps.push(`${step}/${total}`),
      onModel: async (step, model) => {
        if (step === 2) afterFirstCycle.push(await weights(model));
      },
    });
    expect(steps).toEqual(['1/6', '2/6', '3/6', '4/6', '5/6', '6/6']);
    expect(two.losses.slice(0, 2)).toEqual(one.losses);
    expect(two.losses).toHaveLength(6);
    // The tokenizer comes from the first cycle's demonstrations alone, and the first cycle trains as without a second.
    expect(JSON.stringify(two.tokenizer.toJSON())).toBe(JSON.stringify(one.tokenizer.toJSON()));
    expect(afterFirstCycle[0]).toEqual(await weights(one.model));
    expect(await weights(two.model)).not.toEqual(afterFirstCycle[0]);
    // Each later cycle plays its own demonstrations with its own imperfectFraction: every arm of the second cycle is
    // the low-risk one (1), none of the third's (0), while the first cycle mixes them.
    expect(two.demonstrations.imperfectFraction).toBeGreaterThan(0);
    expect(two.demonstrations.imperfectFraction).toBeLessThan(1);
    expect(two.laterCycleDemonstrations).toMatchObject([
      { episodes: 16, imperfectFraction: 1 },
      { episodes: 8, imperfectFraction: 0 },
    ]);
    expect(two.laterCycleDemonstrations!.map((d) => d.actionsPerAnswer)).toEqual([1, 1]); // Bandit: one arm per answer
    const cycle = { episodes: 8, imperfectFraction: 0, steps: 1, lr: 1e-3, warmupSteps: 1 };
    await expect(
      buildWarmStart('bandit-tiny', { recipe: { episodes: 8, steps: 1, laterCycles: [{ ...cycle, seed: 0 }] } }),
    ).rejects.toThrow(/two cycles have seed 0/);
    await expect(
      buildWarmStart('bandit-tiny', {
        recipe: {
          episodes: 8,
          steps: 1,
          seed: 1,
          laterCycles: [
            { ...cycle, seed: 5 },
            { ...cycle, seed: 5 },
          ],
        },
      }),
    ).rejects.toThrow(/two cycles have seed 5/);
    one.model.dispose();
    two.model.dispose();
  });

  it("a later cycle's actionsPerAnswer sets how many actions its demonstrations send per answer", async () => {
    const built = await buildWarmStart('frozenlake-tiny', {
      recipe: {
        episodes: 16,
        steps: 1,
        actionsPerAnswer: [2, 3],
        laterCycles: [
          { episodes: 16, imperfectFraction: 0, actionsPerAnswer: [1, 1], steps: 1, lr: 1e-3, warmupSteps: 1, seed: 1 },
          { episodes: 16, imperfectFraction: 0, steps: 1, lr: 1e-3, warmupSteps: 1, seed: 2 },
        ],
      },
    });
    // Answers stop early only on the goal, in a hole or at the end of the budget.
    expect(built.demonstrations.actionsPerAnswer).toBeGreaterThan(1.5);
    expect(built.laterCycleDemonstrations!.map((d) => d.actionsPerAnswer)).toEqual([1, expect.any(Number)]);
    expect(built.laterCycleDemonstrations![1].actionsPerAnswer).toBeGreaterThan(1.5); // the recipe's again
    built.model.dispose();
  }, 60_000);
});

describe('warm start: recipes', () => {
  it('maps presets to the warm start they load, and refuses presets without one', () => {
    expect(warmStartRecipeName('bandit-tiny')).toBe('bandit-tiny');
    expect(warmStartRecipeName('echo-trap')).toBe('echo-trap');
    // The lesson's warm start is played as bandit-tiny: its demonstrations and check use that preset's run config.
    expect(warmStartRunConfig('echo-trap')).toEqual(presetConfig('bandit-tiny'));
    expect(WARMSTART_RECIPES['echo-trap']).toEqual({
      ...WARMSTART_RECIPES['bandit-tiny'],
      steps: 150,
      playedAs: 'bandit-tiny',
    });
    expect(() => warmStartRecipeName('sokoban-qwen')).toThrow(/no warm start/);
    expect(() => warmStartRecipeName('nope')).toThrow(/nope/);
  });

  it('builds the model config from the preset shape and the tokenizer vocabulary', () => {
    const tiny = presetConfig('sokoban-tiny').model.tiny;
    const config = tinyQwen2Config(tiny, 537);
    expect(config).toMatchObject({
      vocab_size: 537,
      hidden_size: tiny.hiddenSize,
      num_hidden_layers: tiny.numLayers,
      tie_word_embeddings: true,
    });
  });
});
