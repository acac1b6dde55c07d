// The played episodes of a scorecard as records, one per episode: what `ragen eval --trajectories FILE` writes as
// JSONL, so anyone can read what the agent saw, thought, answered and did on every evaluated state.
// Browser-safe (no fs): the CLI writes the lines (src/eval/episodeFile.ts).
import type { Trajectory } from '../agent/index';
import { toTurnRecord, type RolloutTurnRecord } from '../metrics/rolloutRecord';
import type { EvalSuite, SuiteKind } from './suites';

export const EPISODE_RECORD_FORMAT = 'ragen-ts-eval-episode/1';

/** A turn as rollouts.jsonl records it (turn, state, think, answer, formatOk, actions, reward), plus: */
export interface EpisodeTurnRecord extends RolloutTurnRecord {
  /** Actions read from the answer, before name mapping, the action budget and the episode's end cut them. */
  parsedActions: string[];
}

export interface EpisodeRecord {
  format: typeof EPISODE_RECORD_FORMAT;
  /** The scored policy (checkpoint directory, or the scripted agent's name). */
  policy: string;
  suite: string;
  kind: SuiteKind;
  tag: string;
  /** The suite's env config (null = the tag's defaults). */
  config: Record<string, unknown> | null;
  /** The env seed of the initial state. */
  seed: number;
  /** Which of the k rollouts of this seed (0-based). */
  rollout: number;
  success: boolean;
  /** Sum of the turn rewards, before the format penalty. */
  reward: number;
  /** reward + format penalty. */
  score: number;
  /** Primitive actions executed in the episode. */
  numActions: number;
  turns: EpisodeTurnRecord[];
  /** The observation after the last turn (null when no turn was played). */
  finalState: string | null;
}

/** The record of one played episode; `k` = rollouts per seed (the env group size of the scorecard). */
export function toEpisodeRecord(policy: string, suite: EvalSuite, k: number, t: Trajectory): EpisodeRecord {
  return {
    format: EPISODE_RECORD_FORMAT,
    policy,
    suite: suite.name,
    kind: suite.kind,
    tag: t.tag,
    config: suite.config === undefined ? null : structuredClone(suite.config),
    seed: t.status.seed,
    rollout: t.envId % k,
    success: t.success,
    reward: t.totalReward,
    score: t.score,
    numActions: t.status.numActions,
    turns: t.turns.map((turn) => ({ ...toTurnRecord(turn), parsedActions: [...turn.parsedActions] })),
    finalState: t.turns.length > 0 ? t.history[t.history.length - 1].state : null,
  };
}

/** One JSONL line (non-finite numbers as null, as the metrics files do). */
export function episodeRecordLine(record: EpisodeRecord): string {
  return (
    JSON.stringify(record, (_key, value) => (typeof value === 'number' && !Number.isFinite(value) ? null : value)) +
    '\n'
  );
}
