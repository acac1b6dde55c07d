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
      'It went this way on 4 of the 5 training seeds the preset was tuned on, and less often on fresh seeds: this recording and a ' +
      'live run of the default seed show it. The ⚠ on each chart, in the arm’s colour, marks where its early warning fired.',
    arm: null,
    after: '',
  },
];
