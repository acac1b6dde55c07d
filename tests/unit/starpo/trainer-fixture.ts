// Shared by the trainer tests: a tiny random policy and tokenizer built on the fly, and a small Bandit run config.
import * as tf from '@tensorflow/tfjs';
import { makeEnv } from '../../../envs/index';
import { compactPromptFixedText, envRegistry } from '../../../src/agent/index';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { DEFAULT_SPECIAL_TOKENS, buildTinyTokenizer, type Tokenizer } from '../../../src/model/tokenizer';
import type { Qwen2Config } from '../../../src/model/config';
import { parseRunConfig, type RunConfig, type RunConfigInput, mergeConfigInput } from '../../../src/starpo/config';
import { MemorySink } from '../../../src/metrics/sink';
import { Trainer } from '../../../src/starpo/trainer';

/** A byte-level BPE tokenizer over Bandit's compact prompt text and a few well-formed responses. */
export function tinyBanditTokenizer(): Tokenizer {
  const registry = envRegistry();
  const corpus: string[] = [];
  for (const tag of ['Bandit', 'BanditTest']) {
    corpus.push(compactPromptFixedText(registry.promptInfo(tag)));
    const env = makeEnv(tag);
    for (let s = 0; s < 6; s++) {
      corpus.push(env.reset(s));
      for (const arm of env.actionNames) corpus.push(`<think>I pick ${arm}.</think><answer>${arm}</answer>`);
    }
  }
  return buildTinyTokenizer(corpus, { vocabSize: 360, specialTokens: DEFAULT_SPECIAL_TOKENS });
}

export function tinyModelConfig(vocabSize: number): Qwen2Config {
  return {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    vocab_size: vocabSize,
    hidden_size: 16,
    intermediate_size: 32,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    max_position_embeddings: 512,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    hidden_act: 'silu',
    initializer_range: 0.02,
  };
}

/** A fresh tiny random policy (seeded: the same seed gives the same weights). */
export function tinyPolicy(seed = 7): { model: Qwen2Model; tokenizer: Tokenizer } {
  const tokenizer = tinyBanditTokenizer();
  const config = tinyModelConfig(tokenizer.vocabSize);
  return { model: new Qwen2Model(config, initQwen2Weights(config, seed)), tokenizer };
}

/**
 * Bandit with 2 env groups x 4 rollouts, 1 turn, 10 new tokens; filter 0.5 keeps one group = one mini-batch of 4,
 * two micro-batches of 2; validation on 1 Bandit + 1 BanditTest state every 2 steps.
 */
export function tinyBanditConfig(over: RunConfigInput = {}): RunConfig {
  const base: RunConfigInput = {
    model: { pretrained: null, promptStyle: 'compact' },
    agent: {
      trainEnvs: [{ tag: 'Bandit', nGroups: 2 }],
      valEnvs: [
        { tag: 'Bandit', nGroups: 1 },
        { tag: 'BanditTest', nGroups: 1 },
      ],
      envGroups: 2,
      groupSize: 4,
      valGroups: 2,
      valGroupSize: 1,
      maxTurn: 1,
      maxActionsPerTurn: 1,
    },
    rollout: { maxNewTokens: 10 },
    filter: { ratio: 0.5 },
    actor: { lr: 1e-3, ppoMiniBatchSize: 4, ppoMicroBatchSize: 2 },
    critic: { lr: 1e-3 },
    trainer: { totalSteps: 4, testFreq: 2, saveFreq: 2, seed: 3, backend: 'wasm', logRollouts: 2 },
  };
  return parseRunConfig(mergeConfigInput(base, over), 'test config');
}

/** Runs a trainer to its last step and returns tf.memory().numTensors after each step (for the flat-memory checks). */
export async function tensorCountsPerStep(trainer: { finished: boolean; step(): Promise<unknown> }): Promise<number[]> {
  const counts: number[] = [];
  while (!trainer.finished) {
    await trainer.step();
    counts.push(tf.memory().numTensors);
  }
  return counts;
}

/** A Trainer on the tiny random policy, with a memory sink and the lines it logged. */
export async function makeTrainer(config: RunConfig, extra: Partial<Parameters<typeof Trainer.create>[1]> = {}) {
  const sink = new MemorySink();
  const lines: string[] = [];
  const trainer = await Trainer.create(config, { ...tinyPolicy(), sink, log: (l) => lines.push(l), ...extra });
  return { trainer, sink, lines };
}

/** Every variable's values, read back. */
export async function weightsOf(vars: Record<string, tf.Variable>): Promise<Record<string, Float32Array>> {
  const out: Record<string, Float32Array> = {};
  for (const [name, v] of Object.entries(vars)) out[name] = (await v.data()) as Float32Array;
  return out;
}
