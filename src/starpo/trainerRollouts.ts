// How the Trainer plays its env groups, apart from the algorithm: each training step's env seeds, the generate
// function runRollouts calls (sampling seeded by trainer seed, split, step and call; half the dialogues on a helper
// when there is one), and the few sample rollouts a step writes to the sink. Pure functions of the config and the
// models they are given, so a resumed run plays exactly what the uninterrupted one would.
import { EnvGroupManager, envRegistry, type AgentFormat, type GenerateFn, type Trajectory } from '../agent/index';
import { mixSeed, seededUniform } from '../model/seeded';
import type { Qwen2Model } from '../model/qwen2';
import type { Tokenizer } from '../model/tokenizer';
import { sampleRolloutRecords } from '../metrics/rolloutRecord';
import type { MetricSink } from '../metrics/sink';
import { agentFormatFromConfig, envGroupsConfig, type RunConfig } from './config';
import type { HelperLink } from './parallel';
import { policyGenerateFn } from './policyAgent';
import { probedGeneration, type WorkloadProbe } from './workloadProbe';

/** How the agent talks in every rollout of the run, and the env groups of training and of validation. */
export function trainerEnvGroups(config: RunConfig): {
  format: AgentFormat;
  train: EnvGroupManager;
  val: EnvGroupManager;
} {
  const format = agentFormatFromConfig(config);
  const registry = envRegistry({ responseLength: format.responseLength });
  return {
    format,
    train: new EnvGroupManager(envGroupsConfig(config, 'train'), registry),
    val: new EnvGroupManager(envGroupsConfig(config, 'val'), registry),
  };
}

/**
 * Base env seed of training step `step` (1-based): RAGEN's seedTrain + envGroups x (step - 1), a function of the
 * step alone, so a resumed run sees the same envs as an uninterrupted one. With seedTrain null (RAGEN: random per
 * reset) the base is drawn from a generator seeded by trainer.seed and the step.
 */
export function trainSeedBase(config: RunConfig, step: number): number {
  if (config.agent.seedTrain !== null) return config.agent.seedTrain + config.agent.envGroups * (step - 1);
  return Math.floor(seededUniform(mixSeed(config.trainer.seed, step, 0x5eed))() * 1_000_001);
}

export interface GenerationParts {
  config: RunConfig;
  actor: Qwen2Model;
  tokenizer: Tokenizer;
  helper: HelperLink | null;
  workloadProbe?: WorkloadProbe;
}

/**
 * The policy as runRollouts sees it: sampling seeded by (trainer seed, split, step, call). With a helper, the
 * dialogues of odd env ids are generated there, at the same time (the helper first gets the actor's weights when
 * they changed).
 */
export async function rolloutGenerateFn(
  parts: GenerationParts,
  split: 'train' | 'val',
  step: number,
  temperature: number,
): Promise<GenerateFn> {
  const { config: c, actor, helper, workloadProbe } = parts;
  const seedParts = [c.trainer.seed, split === 'train' ? 1 : 2, step];
  const local = policyGenerateFn(actor, parts.tokenizer, {
    maxNewTokens: c.rollout.maxNewTokens,
    temperature,
    topP: c.rollout.topP,
    topK: c.rollout.topK,
    maxBatchSize: c.rollout.maxBatchSize,
    engine: c.rollout.engine,
    seedForCall: (call) => mixSeed(...seedParts, call),
  });
  const fn = helper ? await helper.splitGeneration(local, actor, temperature, seedParts) : local;
  return workloadProbe && split === 'train' ? probedGeneration(fn, workloadProbe) : fn;
}

/** A few trajectories per step (one per env group, in group order) with their think / answer text per turn. */
export async function writeSampleRollouts(
  sink: MetricSink,
  config: RunConfig,
  step: number,
  split: 'train' | 'val',
  trajectories: readonly Trajectory[],
): Promise<void> {
  const n = config.trainer.logRollouts;
  if (n === 0 || !sink.writeRollouts) return;
  const groupSize = split === 'train' ? config.agent.groupSize : config.agent.valGroupSize;
  await sink.writeRollouts(step, sampleRolloutRecords(trajectories, groupSize, n, step, split));
}
