// The same prompt at two training steps, for the side-by-side reasoning view: the class sees whether the policy still
// reasons about the board in front of it, or has settled on a template (the echo trap). A prompt is one env seed of
// one split: validation replays the same fixed seeds (agent.seedVal, 123 …) at every validation step, so its sample
// trajectories line up across steps; a training seed lines up only where the same seed was logged twice. Records are
// matched on the seed AND the initial state, so two different boards are never shown as "the same prompt". Pure
// TypeScript (ReasoningCompare.svelte draws it).
import type { ViewedTrajectory } from './trajectories';
import type { StoredRollout } from '../../workers/protocol';

/** The props of both reasoning views (ReasoningCompare.svelte, TemplateCompare.svelte): one run's sample trajectories. */
export interface ReasoningViewProps {
  rollouts: StoredRollout[];
  /** The arm these trajectories belong to, when several are on screen (named in the heading, in its colour). */
  arm?: string | null;
  colour?: string | null;
  /** Projector sizes (the lesson page). */
  large?: boolean;
}

/** One prompt (initial state) and the trajectory logged for it at each step where it was played. */
export interface PromptHistory {
  /** `split|tag|seed|initial state`: what makes two records the same prompt. */
  key: string;
  split: string | null;
  tag: string;
  seed: number | null;
  /** The board the first turn saw. */
  initialState: string;
  /** Steps ascending, at least two. */
  steps: number[];
  /** The first trajectory logged for this prompt at each step. */
  byStep: Map<number, ViewedTrajectory>;
}

const SPLIT_ORDER: Record<string, number> = { val: 0, train: 1 };

/**
 * The prompts logged at two or more steps, validation first (its seeds are the ones replayed at every validation),
 * then by seed. `byStep` is the viewer's grouping (groupByStep).
 */
export function promptHistories(byStep: ReadonlyMap<number, readonly ViewedTrajectory[]>): PromptHistory[] {
  const found = new Map<string, PromptHistory>();
  for (const [step, list] of [...byStep].sort((a, b) => a[0] - b[0])) {
    for (const t of list) {
      const initialState = t.turns[0]?.state;
      if (initialState === undefined) continue;
      const key = `${t.split ?? ''}|${t.tag}|${t.seed ?? ''}|${initialState}`;
      let h = found.get(key);
      if (!h) {
        h = { key, split: t.split, tag: t.tag, seed: t.seed, initialState, steps: [], byStep: new Map() };
        found.set(key, h);
      }
      if (!h.byStep.has(step)) {
        h.byStep.set(step, t);
        h.steps.push(step);
      }
    }
  }
  return [...found.values()]
    .filter((h) => h.steps.length >= 2)
    .sort(
      (a, b) =>
        (SPLIT_ORDER[a.split ?? ''] ?? 2) - (SPLIT_ORDER[b.split ?? ''] ?? 2) ||
        (a.seed ?? Infinity) - (b.seed ?? Infinity) ||
        a.key.localeCompare(b.key),
    );
}

/** The prompt's name in the picker, e.g. "validation map, seed 123 (steps 0, 10, 20)". */
export function promptLabel(h: PromptHistory): string {
  const what = h.split === 'val' ? 'validation' : h.split === 'train' ? 'training' : (h.split ?? 'sample');
  const board = h.tag.startsWith('Bandit') ? 'prompt' : 'board';
  const steps =
    h.steps.length > 6 ? `${h.steps.length} steps, ${h.steps[0]}–${h.steps.at(-1)}` : `steps ${h.steps.join(', ')}`;
  return `${what} ${board}${h.seed !== null ? `, seed ${h.seed}` : ''} (${steps})`;
}

/** What the view shows: a prompt and two of its steps. */
export interface Comparison {
  key: string;
  early: number;
  late: number;
}

/**
 * The comparison to show: the picked one where it still exists in the data (a step that is gone falls back to the
 * prompt's first / last step), otherwise the first prompt's first and last step. Null when no prompt was logged twice.
 */
export function chooseComparison(
  histories: readonly PromptHistory[],
  picked: Partial<Comparison> = {},
): Comparison | null {
  const h = histories.find((x) => x.key === picked.key) ?? histories[0];
  if (!h) return null;
  const early = picked.early !== undefined && h.byStep.has(picked.early) ? picked.early : h.steps[0];
  const late = picked.late !== undefined && h.byStep.has(picked.late) ? picked.late : h.steps.at(-1)!;
  return { key: h.key, early, late };
}

/** One board's first turn at a step, for the "different boards, the same step" view. */
export interface BoardTurn {
  /** `split|tag|initial state`: two records of the same board at one step count once. */
  key: string;
  split: string | null;
  tag: string;
  initialState: string;
  think: string;
  answer: string;
  success: boolean;
}

/** Distinct boards at one step (first record of each, file order) and how many distinct reasonings they got. */
export interface BoardsAtStep {
  step: number;
  boards: BoardTurn[];
  /** Distinct first-turn <think> texts among the boards: 1 on several boards is a template (RAGEN-2). */
  distinctThinks: number;
}

/** The distinct boards whose first turn was logged at `step`, training and validation alike. */
export function boardsAtStep(byStep: ReadonlyMap<number, readonly ViewedTrajectory[]>, step: number): BoardsAtStep {
  const boards = new Map<string, BoardTurn>();
  for (const t of byStep.get(step) ?? []) {
    const first = t.turns[0];
    if (first?.state === undefined) continue;
    const key = `${t.split ?? ''}|${t.tag}|${first.state}`;
    if (!boards.has(key))
      boards.set(key, {
        key,
        split: t.split,
        tag: t.tag,
        initialState: first.state,
        think: first.think,
        answer: first.answer,
        success: t.success,
      });
  }
  const list = [...boards.values()];
  return { step, boards: list, distinctThinks: new Set(list.map((b) => b.think.trim())).size };
}

/** Steps at which two or more distinct boards were logged (where a template can be seen), ascending. */
export function templateSteps(byStep: ReadonlyMap<number, readonly ViewedTrajectory[]>): number[] {
  return [...byStep.keys()].filter((s) => boardsAtStep(byStep, s).boards.length >= 2).sort((a, b) => a - b);
}
