// The PyTorch side of a whole training step, for `ragen bench --only step,torch`: what each tfjs step of the step
// section did, in tokens, and the spec that makes tools/bench/torch_step.py (run through torch_bench.py) redo the
// same work in plain PyTorch on the same machine. Sizes and settings come from the step's own RunConfig and model,
// and the token counts from the Trainer itself (TrainerOptions.workloadProbe), so the two sides cannot drift.
//
// What is recorded per step (StepWork):
//   turns  one entry per generate call of the training rollout: rows = dialogues still playing; prefill = the mean
//          tokens a row's prompt adds to its cached dialogue (turn 1: the whole prompt; later turns: the prompt less
//          the previous prompt and response; `fresh`: the whole prompt from an empty cache, when a history window
//          dropped turns, where the tfjs session reuses only the common prefix); decode = the batch's decode steps,
//          the longest response + its end token, at most rollout.maxNewTokens (a batch decodes until its last row
//          stops). Counts are the Trainer tokenizer's, of the prompt and response text. Approximate in cost, not
//          exact: means over rows, and the tfjs session prefills an env group's identical first prompts once
//          (generate.ts), which the PyTorch side does not (every row prefills its own).
//   train  each trained sequence's length (after the uncertainty filter; per turn in single_turn mode).
//   trainFrom  each trained sequence's first loss target: a micro-batch's log-prob passes run the LM head from the
//          smallest of its sequences' on (PaddedBatch.firstLossTarget), on both sides.
import type { Qwen2Config } from '../model/config';
import type { RunConfig } from '../starpo/config';
import type { WorkloadProbe } from '../starpo/workloadProbe';

export interface StepWork {
  turns: { rows: number; prefill: number; decode: number; fresh: boolean }[];
  train: number[];
  trainFrom: number[];
}

/** A step section run as the PyTorch side needs it: the preset, its config and model, and what its steps did. */
export interface StepRunWork {
  preset: string;
  config: RunConfig;
  model: Qwen2Config;
  /** Whether the Trainer had a reference model (a KL term) and a critic (PPO). */
  reference: boolean;
  critic: boolean;
  warmup: StepWork;
  timed: StepWork[];
}

/** Collects a step's work from the Trainer's workloadProbe calls; `take()` counts it in tokens (after the step, so
 *  the tokenising is not timed), returns it and starts the next step. */
export class StepWorkRecorder implements WorkloadProbe {
  private turns: { prompts: readonly string[]; responses: readonly string[] }[] = [];
  private train: number[] = [];
  private trainFrom: number[] = [];

  constructor(private readonly maxNewTokens: number) {}

  rolloutTurn(prompts: readonly string[], responses: readonly string[]): void {
    this.turns.push({ prompts, responses });
  }

  trainBatch(sequenceTokens: number[], firstLossTargets: number[]): void {
    this.train.push(...sequenceTokens);
    this.trainFrom.push(...firstLossTargets);
  }

  take(tokenizer: { encode(text: string): ArrayLike<number> }): StepWork {
    const count = (text: string) => tokenizer.encode(text).length;
    const work: StepWork = { turns: [], train: this.train, trainFrom: this.trainFrom };
    let cached = 0; // mean prompt + response tokens of the previous turn: what the KV cache holds
    for (const turn of this.turns) {
      const prompt = mean(turn.prompts.map(count));
      const response = turn.responses.map(count);
      const added = Math.round(prompt - cached);
      const decode = Math.min(this.maxNewTokens, Math.max(...response) + 1);
      const fresh = added < 1; // the prompt does not extend the cached dialogue: prefill it whole, from an empty cache
      work.turns.push({ rows: turn.prompts.length, prefill: fresh ? Math.round(prompt) : added, decode, fresh });
      cached = prompt + mean(response);
    }
    this.turns = [];
    this.train = [];
    this.trainFrom = [];
    return work;
  }
}

/** The tokens of a step's work, as both sides count them: rollout = rows x (prefill + decode) over the turns. */
export function stepWorkTokens(work: StepWork): { rollout: number; train: number } {
  return {
    rollout: work.turns.reduce((s, t) => s + t.rows * (t.prefill + t.decode), 0),
    train: work.train.reduce((s, n) => s + n, 0),
  };
}

/** One entry of the "steps" spec that tools/bench/torch_step.py reads (see its docstring). */
export function torchStepSpec(run: StepRunWork): Record<string, unknown> {
  const c = run.config;
  if (c.lora.enabled) throw new Error(`${run.preset}: the PyTorch step has no LoRA; run the step section without it`);
  const m = run.model;
  return {
    name: run.preset,
    config: {
      vocab_size: m.vocab_size,
      hidden_size: m.hidden_size,
      intermediate_size: m.intermediate_size,
      num_hidden_layers: m.num_hidden_layers,
      num_attention_heads: m.num_attention_heads,
      num_key_value_heads: m.num_key_value_heads,
      max_position_embeddings: m.max_position_embeddings,
      rope_theta: m.rope_theta,
      rms_norm_eps: m.rms_norm_eps,
      tie_word_embeddings: m.tie_word_embeddings,
    },
    settings: {
      maxBatchSize: c.rollout.maxBatchSize,
      temperature: c.rollout.temperature,
      reference: run.reference,
      critic: run.critic,
      miniBatch: c.actor.ppoMiniBatchSize,
      microBatch: c.actor.ppoMicroBatchSize,
      epochs: c.actor.ppoEpochs,
      checkpointing: c.model.gradientCheckpointing,
      actor: {
        lr: c.actor.lr,
        betas: c.actor.betas,
        weightDecay: c.actor.weightDecay,
        gradClip: c.actor.gradClip,
        clipLow: c.actor.clipRatioLow,
        clipHigh: c.actor.clipRatioHigh,
        clipC: c.actor.clipRatioC,
        entropyCoeff: c.actor.entropyCoeff,
      },
      criticOptim: {
        lr: c.critic.lr,
        betas: c.critic.betas,
        weightDecay: c.critic.weightDecay,
        gradClip: c.critic.gradClip,
        cliprange: c.critic.cliprangeValue,
      },
    },
    warmup: run.warmup,
    timed: run.timed,
  };
}

/** "<preset> rollout tokens" and "<preset> train tokens": the mean per timed step (the step section's side). */
export function stepWorkResults(run: StepRunWork): Record<string, number> {
  const tokens = run.timed.map(stepWorkTokens);
  return {
    [`${run.preset} rollout tokens`]: mean(tokens.map((t) => t.rollout)),
    [`${run.preset} train tokens`]: mean(tokens.map((t) => t.train)),
  };
}

/**
 * tfjs seconds against PyTorch's, per preset: "<preset> step|rollout|train tfjs/torch" = torch s / tfjs s (above 1 =
 * tfjs faster, as the model rows' ratio), where both sides spent time. train = scoring + update: the tfjs Trainer
 * may take the old log-probs and values from the update's own forward pass (its scoring then counts about 0), so
 * the two are compared together.
 */
export function stepRatios(tfjs: Record<string, number>, torch: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  const seconds = (r: Record<string, number>, p: string) => ({
    step: r[`${p} step s`],
    rollout: r[`${p} rollout s`],
    train: r[`${p} scoring s`] + r[`${p} update s`],
  });
  for (const key of Object.keys(torch).filter((k) => k.endsWith(' step s'))) {
    const preset = key.slice(0, -' step s'.length);
    const [a, b] = [seconds(tfjs, preset), seconds(torch, preset)];
    for (const part of ['step', 'rollout', 'train'] as const) {
      if (a[part] > 0 && b[part] > 0) out[`${preset} ${part} tfjs/torch`] = b[part] / a[part];
    }
  }
  return out;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
