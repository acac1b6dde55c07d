// The rollout viewer's data: sample trajectories as the Trainer and the worker log them (RolloutRecords of
// src/metrics/rolloutRecord.ts: rollouts.jsonl lines, records streamed to the page through the CallbackSink, custom
// episodes), read into a fixed shape the viewer can rely on. A record may also come from a file from elsewhere, so
// the fields the viewer draws are checked, and a missing one is named. Pure TypeScript.
import type { StoredRollout } from '../metrics/jsonl';
import type { RolloutTurnRecord } from '../metrics/rolloutRecord';

/** A turn as the viewer draws it: the turn of a RolloutRecord. */
export type ViewedTurn = RolloutTurnRecord;

export interface ViewedTrajectory {
  step: number;
  /** 'train' (a training rollout), 'val' (validation) or 'custom' (a custom board); null when not recorded. */
  split: string | null;
  tag: string;
  /** Env group (all members of a group start from the same state). */
  groupId: number | null;
  /** The env seed of the initial state (validation uses the same fixed seeds at every step), when recorded. */
  seed: number | null;
  success: boolean;
  /** Sum of turn rewards, before the format penalty. */
  totalReward: number;
  /** totalReward + format penalty: what the trajectory is trained on. */
  score: number;
  turns: ViewedTurn[];
  /** The state after the last turn, when the record carries it. */
  finalState: string | null;
}

function field<T>(
  record: Record<string, unknown>,
  key: string,
  check: (v: unknown) => v is T,
  what: string,
  where: string,
): T {
  const value = record[key];
  if (!check(value)) throw new Error(`${where}: field '${key}' should be ${what}, got ${JSON.stringify(value)}`);
  return value;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number';
const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';
const isArray = (v: unknown): v is unknown[] => Array.isArray(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads one rollout record (a RolloutRecord, or a stored line that should be one). A record without the fields the
 * viewer draws throws an Error naming the field; the others get neutral values when absent.
 */
export function readTrajectory(record: StoredRollout, where = `rollout at step ${record.step}`): ViewedTrajectory {
  const turns = field(record, 'turns', isArray, 'a list of turns', where).map((t, i) => {
    const at = `${where}, turn #${i + 1}`;
    if (!isObject(t)) throw new Error(`${at}: not an object`);
    return {
      turn: isNumber(t.turn) ? t.turn : i + 1,
      state: field(t, 'state', isString, 'a string', at),
      think: isString(t.think) ? t.think : '',
      answer: isString(t.answer) ? t.answer : '',
      formatOk: isBoolean(t.formatOk) ? t.formatOk : true,
      actions: isArray(t.actions) ? t.actions.map(String) : [],
      reward: isNumber(t.reward) ? t.reward : 0,
    };
  });
  const totalReward = isNumber(record.reward) ? record.reward : turns.reduce((s, t) => s + t.reward, 0);
  return {
    step: record.step,
    split: isString(record.split) ? record.split : null,
    tag: field(record, 'tag', isString, 'an env tag', where),
    groupId: isNumber(record.groupId) ? record.groupId : null,
    seed: isNumber(record.seed) ? record.seed : null,
    success: isBoolean(record.success) ? record.success : false,
    totalReward,
    score: isNumber(record.score) ? record.score : totalReward,
    turns,
    finalState: isString(record.finalState) ? record.finalState : null,
  };
}

/** Trajectories grouped by training step, steps ascending; records that cannot be read are counted, not shown. */
export function groupByStep(records: readonly StoredRollout[]): {
  byStep: Map<number, ViewedTrajectory[]>;
  unreadable: string[];
} {
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
