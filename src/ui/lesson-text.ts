// The Echo Trap lesson's words, in one place: what the class is told to watch for, and the captions the page puts
// on what it shows. Kept short (a projector, a class) and true of the recording that ships with the site: numbers
// are never written here, the page computes them from the data (docs/echo-trap.md has the measurements).

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

/** What to watch for, in order. */
export const LESSON_WATCH: readonly WatchItem[] = [
  {
    before: 'Success rises in both arms at first. Then the in-group reward std falls first for',
    arm: 'vanilla',
    after: ': every rollout of a prompt gives the same answer, so there is little left to learn from.',
  },
  {
    before: 'It keeps updating on that noise: its reasoning shrinks to one template, the answer format breaks and success falls. That is the echo trap.',
    arm: null,
    after: '',
  },
  { before: '', arm: 'stabilised', after: ' trains only on prompts whose rollouts still disagree, and holds.' },
  {
    before:
      'This recording and a live run of the default seed show it; how often other seeds do is in the table below. ' +
      'The ⚠ on each chart, in the arm’s colour, marks where its early warning fired.',
    arm: null,
    after: '',
  },
];

/** What a teacher can do when a live run does not show the lesson (docs/echo-trap.md, "If a live run does not show it"). */
export const LESSON_IF_NOT_SHOWN: readonly string[] = [
  'Vanilla stays near 100 % to the end: it converged and keeps training on noise (its warning fired), but the collapse had not come yet. The collapse is a random walk, so when it comes varies from seed to seed: train longer (?lesson&steps=150) or show the recording.',
  'StarPO-S falls too: at this learning rate one large update can break its answer format, and a run where every rollout fails has nothing left to learn from. That is the instability of a small model at a high learning rate, not the echo trap: say so, and show the recording.',
  'Not enough class time: “Show the recorded lesson” loads the default seed at once; a live run of that seed replays it step for step on wasm.',
];
