// The Echo Trap lesson's words, in one place: what the class is told to watch for, and the captions the page puts
// on what it shows. Kept short (a projector, a class) and true of the recording that ships with the site: numbers
// are never written here, the page computes them from the data (docs/echo-trap.md has the measurements).

import type { LessonPreset } from './lesson';

/** Shown where a turn's reasoning (the text inside <think>) is empty, instead of a bare dash. */
export const EMPTY_REASONING = '(empty: no reasoning written)';
/** Shown where a turn has no answer. */
export const EMPTY_ANSWER = '(no answer)';

/** One "what to watch for" item: text before and after the arm it names (null: no arm named). */
export interface WatchItem {
  before: string;
  arm: 'vanilla' | 'stabilised' | null;
  after: string;
}

/** What to watch for in the outcome lesson (`?lesson`, Bandit), in order. */
export const LESSON_WATCH: readonly WatchItem[] = [
  {
    before:
      'Both arms first learn to pick Dragon, the arm that pays. Then the 8 answers to each question agree more and more ' +
      '(the “disagree” chart falls towards 0) for',
    arm: 'vanilla',
    after:
      ': when all 8 answers agree they earn the same reward, so there is nothing left to learn from them. The ⚠ marks that early warning.',
  },
  {
    before:
      'It keeps updating anyway, on noise: its reasoning shrinks, its answers stop following the format and success falls. That is the echo trap.',
    arm: null,
    after: '',
  },
  {
    before: '',
    arm: 'stabilised',
    after:
      ' learns only from questions whose answers still disagree; when none do, it makes no update at all. It holds.',
  },
  {
    before:
      'Each arm trains several times, on different seeds: a thin line is one run, the thick line the mean, and the sentence ' +
      'above counts in how many runs each arm collapsed. How often it shows on seeds nobody tuned it on is in the table below.',
    arm: null,
    after: '',
  },
];

/** What a teacher can do when a live run does not show the lesson (docs/echo-trap.md, "If a live run does not show it"). */
export const LESSON_IF_NOT_SHOWN: readonly string[] = [
  'Vanilla stays near 100 % to the end: it converged and keeps training on noise (its warning fired), but the collapse had not come yet. The collapse is a random walk, so when it comes varies from seed to seed: train longer (?lesson&steps=150) or show the recording.',
  'StarPO-S falls too: at this learning rate one large update can break its answer format, and a run where every rollout fails has nothing left to learn from. That is the instability of a small model at a high learning rate, not the echo trap: say so, and show the recording.',
  'Not enough class time: “Show the recorded lesson” loads the same runs at once; a live lesson on wasm trains the same seeds and replays them step for step.',
];

/** What to watch for in the mechanism lesson (`?lesson=echo-trap-frozenlake`), in order. */
export const MECHANISM_WATCH: readonly WatchItem[] = [
  {
    before:
      'Both arms learn to walk 8 small lakes to the goal. The “input dependence” chart is RAGEN-2’s mutual information ' +
      'between the lake a turn sees and the reasoning it writes (measured every 5 steps): high while the reasoning talks ' +
      'about the lake in front of it. Watch it fall first for',
    arm: 'vanilla',
    after:
      ', while its success still holds: its reasoning becomes one template for every lake (“different boards, the same step” below: one text on every lake).',
  },
  {
    before:
      'Only later does its success fall (on some seeds it climbs part of the way back). Its reward std had fallen long before (the ⚠): its groups agree, so what it trains on is mostly noise.',
    arm: null,
    after: '',
  },
  {
    before: '',
    arm: 'stabilised',
    after:
      ' trains only on lakes where at least two of the four rollouts disagree with the rest: its reasoning keeps reading the lake (its MI stays up), and its success holds, ' +
      'below vanilla’s peak (a lake whose rollouts split three to one is no longer trained on).',
  },
  {
    before:
      'This recording and a live run of the default seed show it; how often other seeds do is in the table below.',
    arm: null,
    after: '',
  },
];

/** What a teacher can do when a live run of the mechanism lesson does not show it (docs/echo-trap.md, "The mechanism lesson"). */
export const MECHANISM_IF_NOT_SHOWN: readonly string[] = [
  'Vanilla’s MI falls but its success does not within 200 steps: the template has formed and the collapse had not come yet; when it comes varies from seed to seed. Point at the MI chart and the reasoning panel, or show the recording.',
  'Vanilla’s success falls before its MI does, often in one update: it trains on every lake, and once most of its lakes’ rollouts agree its update is mostly noise, and here a large one broke its answers before the reasoning had become a template. The same force as the echo trap, arriving early. Show the recording, or rerun with the default seed.',
  'StarPO-S’s MI falls too (it stayed up on every fresh seed of the table, but not on every seed tried): this tiny policy’s answer can learn to read the lake directly and stop reading its reasoning, so the reasoning no longer decides the reward and nothing holds it to the lake. Say so: the paper’s models reason before they act, this one need not. The curves above show every fresh seed’s MI.',
  'Not enough class time: “Show the recorded lesson” loads the default seed at once; a live run of that seed replays it step for step on wasm.',
];

/** Each lesson's title, what to watch for, what to do when a live run does not show it, and the link to the other one. */
export const LESSON_TEXTS: Record<
  LessonPreset,
  {
    title: string;
    watch: readonly WatchItem[];
    ifNotShown: readonly string[];
    other: { preset: LessonPreset; label: string };
  }
> = {
  'echo-trap': {
    title: 'The Echo Trap',
    watch: LESSON_WATCH,
    ifNotShown: LESSON_IF_NOT_SHOWN,
    other: {
      preset: 'echo-trap-frozenlake',
      label: 'The mechanism: the reasoning stops reading the input first (FrozenLake)',
    },
  },
  'echo-trap-frozenlake': {
    title: 'The Echo Trap: the mechanism',
    watch: MECHANISM_WATCH,
    ifNotShown: MECHANISM_IF_NOT_SHOWN,
    other: { preset: 'echo-trap', label: 'The outcome: collapse against holding (Bandit)' },
  },
};
