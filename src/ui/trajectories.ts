// The rollout viewer's data: sample trajectories as the Trainer logs them (rollouts.jsonl records, streamed to the
// page through the CallbackSink), read into a fixed shape the viewer can rely on. A record is the agent's
// Trajectory (src/agent/rollout.ts) plus its step; the viewer needs only the turn-by-turn part. Pure TypeScript.
import type { RolloutRecord } from '../metrics/jsonl';

export interface ViewedTurn {
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

export interface ViewedTrajectory {
  step: number;
  /** 'train' (a training rollout), 'val' (validation) or 'custom' (a custom board); null when not recorded. */
  split: string | null;
  tag: string;
  /** Env group (all members of a group start from the same state). */
  groupId: number | null;
  success: boolean;
  /** Sum of turn rewards, before the format penalty. */
  totalReward: number;
  /** totalReward + format penalty: what the trajectory is trained on. */
  score: number;
  turns: ViewedTurn[];
  /** The state after the last turn, when the record carries the env history. */
  finalState: string | null;
}

function field<T>(record: Record<string, unknown>, key: string, check: (v: unknown) => v is T, what: string, where: string): T {
  const value = record[key];
  if (!check(value)) throw new Error(`${where}: field '${key}' should be ${what}, got ${JSON.stringify(value)}`);
  return value;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number';
const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';
const isArray = (v: unknown): v is unknown[] => Array.isArray(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads one rollout record. A record without the fields the viewer draws throws an Error naming the field. */
export function readTrajectory(record: RolloutRecord, where = `rollout at step ${record.step}`): ViewedTrajectory {
  const r = record as Record<string, unknown>;
  const turns = field(r, 'turns', isArray, 'a list of turns', where).map((t, i) => {
    const at = `${where}, turn #${i + 1}`;
    if (!isObject(t)) throw new Error(`${at}: not an object`);
    const executed = t.executedActions ?? t.actions ?? [];
    return {
      turn: isNumber(t.turn) ? t.turn : i + 1,
      state: field(t, 'state', isString, 'a string', at),
      think: isString(t.think) ? t.think : '',
      answer: isString(t.answer) ? t.answer : '',
      formatOk: isBoolean(t.formatOk) ? t.formatOk : true,
      actions: isArray(executed) ? executed.map(String) : [],
      reward: isNumber(t.reward) ? t.reward : 0,
    };
  });
  // The state after the last turn: logged as `finalState` by the Trainer, or the last entry of an env history.
  const history = isArray(r.history) ? r.history : null;
  const last = history && history.length > turns.length ? history[history.length - 1] : null;
  const finalState = isString(r.finalState) ? r.finalState : isObject(last) && isString(last.state) ? last.state : null;
  // The Trainer logs the env reward as `reward`; the agent's Trajectory calls it `totalReward`.
  const recorded = isNumber(r.reward) ? r.reward : r.totalReward;
  const totalReward = isNumber(recorded) ? recorded : turns.reduce((s, t) => s + t.reward, 0);
  return {
    step: record.step,
    split: isString(r.split) ? r.split : null,
    tag: field(r, 'tag', isString, 'an env tag', where),
    groupId: isNumber(r.groupId) ? r.groupId : null,
    success: isBoolean(r.success) ? r.success : false,
    totalReward,
    score: isNumber(r.score) ? r.score : totalReward,
    turns,
    finalState,
  };
}

/** Trajectories grouped by training step, steps ascending; records that cannot be read are counted, not shown. */
export function groupByStep(records: readonly RolloutRecord[]): { byStep: Map<number, ViewedTrajectory[]>; unreadable: string[] } {
  const byStep = new Map<number, ViewedTrajectory[]>();
  const unreadable: string[] = [];
  for (const record of records) {
    try {
      const t = readTrajectory(record);
      const list = byStep.get(t.step) ?? [];
      list.push(t);
      byStep.set(t.step, list);
    } catch (err) {
      unreadable.push((err as Error).message);
    }
  }
  return { byStep: new Map([...byStep].sort((a, b) => a[0] - b[0])), unreadable };
}

/**
 * The states to draw for a trajectory, one per position of the step-through control: each turn's starting state,
 * then the final state when known. Position i < turns.length shows turn i's state, think and answer.
 */
export function framesOf(t: ViewedTrajectory): { state: string; turn: ViewedTurn | null }[] {
  const frames: { state: string; turn: ViewedTurn | null }[] = t.turns.map((turn) => ({ state: turn.state, turn }));
  if (t.finalState !== null) frames.push({ state: t.finalState, turn: null });
  return frames;
}
