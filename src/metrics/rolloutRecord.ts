// One sample trajectory as it is logged: a line of rollouts.jsonl, a record streamed to the page, a custom-board
// episode. Both writers (the Trainer's sample rollouts and the playground worker's single episodes) build it with
// toRolloutRecord, and the rollout viewer (src/ui/trajectories.ts) reads exactly these fields.
//
// No import from src/agent (src/metrics depends on nothing outside it): `RecordableTrajectory` names the part of
// the agent's Trajectory (src/agent/rollout.ts) that a record keeps, and a Trajectory fits it as it is.

/** Where a trajectory was played: a training rollout, a validation rollout, or a board the user built. */
export type RolloutSplit = 'train' | 'val' | 'custom';

export interface RolloutTurnRecord {
  /** 1-based turn number. */
  turn: number;
  /** The env state text the model saw at the start of the turn. */
  state: string;
  think: string;
  answer: string;
  /** The answer parsed as <think>…</think><answer>…</answer> (false = a format penalty was charged). */
  formatOk: boolean;
  /** Actions the env executed this turn. */
  actions: string[];
  /** Env reward of the turn (no format penalty). */
  reward: number;
}

export type RolloutRecord = {
  /** The training step the trajectory belongs to (0 = the validation before training). */
  step: number;
  split: RolloutSplit;
  envId: number;
  /** Env group: all members of a group start from the same state. */
  groupId: number;
  tag: string;
  /** The env seed of the initial state. */
  seed: number;
  success: boolean;
  /** Sum of the turn rewards, before the format penalty. */
  reward: number;
  /** reward + format penalty: what the trajectory is trained on. */
  score: number;
  turns: RolloutTurnRecord[];
  /** The state after the last turn, for the viewer's last frame (null when the history does not reach past it). */
  finalState: string | null;
};

/** What a record keeps of the agent's Trajectory. */
export interface RecordableTrajectory {
  envId: number;
  groupId: number;
  tag: string;
  status: { seed: number };
  success: boolean;
  totalReward: number;
  score: number;
  turns: readonly {
    turn: number;
    state: string;
    think: string;
    answer: string;
    formatOk: boolean;
    executedActions: readonly string[];
    reward: number;
  }[];
  /** Every state the env went through: the initial one, then one after each turn. */
  history: readonly { state: string }[];
}

export function toRolloutRecord(t: RecordableTrajectory, step: number, split: RolloutSplit): RolloutRecord {
  return {
    step,
    split,
    envId: t.envId,
    groupId: t.groupId,
    tag: t.tag,
    seed: t.status.seed,
    success: t.success,
    reward: t.totalReward,
    score: t.score,
    turns: t.turns.map(toTurnRecord),
    finalState: t.history.length > t.turns.length ? t.history[t.history.length - 1].state : null,
  };
}

/** The sample a run logs per step: the first trajectory of each env group (groups of `groupSize`, in order), `n` at most. */
export function sampleRolloutRecords(
  trajectories: readonly RecordableTrajectory[],
  groupSize: number,
  n: number,
  step: number,
  split: RolloutSplit,
): RolloutRecord[] {
  const picked: RolloutRecord[] = [];
  for (let i = 0; i < trajectories.length && picked.length < n; i += groupSize)
    picked.push(toRolloutRecord(trajectories[i], step, split));
  return picked;
}

/** The record of one turn (also each turn of `ragen eval --trajectories`, src/eval/episodes.ts). */
export function toTurnRecord(turn: RecordableTrajectory['turns'][number]): RolloutTurnRecord {
  return {
    turn: turn.turn,
    state: turn.state,
    think: turn.think,
    answer: turn.answer,
    formatOk: turn.formatOk,
    actions: [...turn.executedActions],
    reward: turn.reward,
  };
}
