// What a Trainer is given and what one step returns (src/starpo/trainer.ts): the options callers pass (where metrics go,
// progress, the helper thread, test and benchmark hooks) and the step result. Kept apart from the algorithm.
import type * as tf from '@tensorflow/tfjs';
import type { MetricSink } from '../metrics/sink';
import type { EarlyStopReason } from './earlyStop';
import type { HelperApi } from './helper';
import type { TrainerSource } from './trainerCheckpoint';
import type { WorkloadProbe } from './workloadProbe';

/**
 * Where a step is, for progress displays: 'validation' (the fixed val env groups, before the first step and every
 * testFreq steps), 'rollout' (tokens generated of the step's budget), 'collapse' (micro-batches of the collapse
 * diagnostics' cross-scoring, once per sample strategy, on the steps that run them), 'scoring' (micro-batches of old /
 * reference log-probs and critic values), 'update' (optimizer steps over the PPO epochs x mini-batches).
 */
export type StepPhase = 'validation' | 'rollout' | 'collapse' | 'scoring' | 'update';

/** How a Trainer starts (exactly one of `policyFiles`, `model` + `tokenizer`, or `resumeFiles`) and where it reports. */
export interface TrainerOptions extends TrainerSource {
  /** Where each step's metrics row and sample trajectories go. */
  sink: MetricSink;
  /** Human-readable progress lines (skipped updates, early stopping). */
  log?: (line: string) => void;
  /**
   * Test / debugging hook: sees every actor or critic loss before it is differentiated and may replace it (e.g.
   * multiply by NaN to check that a poisoned update is skipped). Not part of a normal run.
   */
  lossHook?: (kind: 'actor' | 'critic', step: number, loss: tf.Scalar) => tf.Scalar;
  /**
   * Test / benchmark switch (default true): let a one-mini-batch update take the old log-probs and values from its
   * own forward pass (see updateForwardReusable in update.ts). false always scores first, as RAGEN does; the results are the same.
   */
  reuseUpdateForward?: boolean;
  /**
   * A helper on a second core (helper.ts; spawned by the caller: src/node/helperThread.ts in Node, the playground's
   * worker in the browser): it generates half of every rollout batch and, for PPO, scores and updates the critic
   * while this thread does the actor. Same results as without it. The caller owns it (and ends it after dispose()).
   */
  helper?: HelperApi;
  /**
   * Progress inside a step (`done` of `total` in `phase`), called often (every generated token). Awaited, and a
   * throw from it abandons the step: while `canAbandonStep` is true nothing of the step has been kept, so the
   * Trainer is exactly as before the call and running the step again gives the same result (the browser's Stop).
   */
  onProgress?: (phase: StepPhase, done: number, total: number) => void | Promise<void>;
  /**
   * Benchmark hook (`ragen bench --only step,torch`, src/bench/torchStep.ts): told the token counts of each
   * training step's work, so that the PyTorch side can redo the same work. Not part of a normal run.
   */
  workloadProbe?: WorkloadProbe;
}

/** What one call of `step()` did. */
export interface StepResult {
  step: number;
  metrics: Record<string, number>;
  /** The step's text metrics (TEXT_METRIC_KEYS: `echo_trap/signal` once the warning fired), also in its metrics row. */
  labels: Record<string, string>;
  /** True when this step validated (its metrics carry `val-env/...`). */
  validated: boolean;
  /** Set when early stopping ended the run at this step. */
  stoppedBy: EarlyStopReason | null;
}
