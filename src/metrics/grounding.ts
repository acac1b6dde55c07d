// Is the reasoning about the state? Checkable claims in <think>, tested against the observation the agent saw.
//
// A claim is a statement that is true or false of the current state: where the player, a box, a target, the goal or
// a hole is ("box at (3, 2)", "row 1, col 2"), which way one thing lies from another ("the target is up and to
// the left of the box", "the box must go straight up", "the goal is down of me"), whether a hole is next to the
// player ("hole to the left", "no hole is next to me"), or, for Bandit, which arm sounds risky and which safe (true
// when the risky-sounding arm is the one with the higher expectation). Claims are found with patterns over the
// lower-cased text; text that matches none is not a claim (plans and intentions are not checked here).
//
//   reasoning/grounding        true claims / checkable claims, over a batch of turns
//   reasoning/grounding_blind  the same claims checked against another state of the batch (same env tag): the
//                              rate of a reader who ignores the board (the chance level)
//   reasoning/answer_agreement turns whose reasoning names a choice ("so I pick Dragon", "I go Up, Left") that equals
//                              the answer's actions, over turns whose reasoning names one
//
// States are read from the observation text: the last block of grid rows (so grid and grid_coord observations both
// work). Pure TypeScript, no tfjs.

/** What a claim is checked against: the grid of one state, or a Bandit's arm names. */
export interface StateFacts {
  /** Grid rows of the state (Sokoban, FrozenLake); empty for Bandit. */
  grid: string[];
  /** Bandit: the arm with the higher expected reward (RAGEN's "high-risk" arm) and the other. */
  bandit?: { hi: string; lo: string };
}

export interface ClaimCount {
  checked: number;
  correct: number;
}

type Family = 'sokoban' | 'frozenlake' | 'bandit';

/** Grid symbols of each family (RAGEN's default Sokoban vocabulary and the alternative one; FrozenLake). */
const SOKOBAN = { wall: '#W', player: 'PSA@', box: 'X√BC', target: 'O√SGC@' } as const;
const SOKOBAN_ALT = new Set(['W', '.', 'G', 'C', 'B', 'A', '@']);
const FROZENLAKE = { player: 'PX√', goal: 'G√', hole: 'OX' } as const;

export function familyOf(tag: string): Family | null {
  if (/sokoban/i.test(tag)) return 'sokoban';
  if (/frozenlake/i.test(tag)) return 'frozenlake';
  if (/bandit/i.test(tag)) return 'bandit';
  return null;
}

/** The last block of at least two equally long grid rows in an observation. */
export function gridRows(observation: string, family: Family): string[] {
  const symbols =
    family === 'frozenlake'
      ? new Set(['P', '_', 'O', 'G', 'X', '√'])
      : new Set(['#', '_', 'O', '√', 'X', 'P', 'S', ...SOKOBAN_ALT]);
  const isRow = (line: string) => [...line].length >= 2 && [...line].every((c) => symbols.has(c));
  let best: string[] = [];
  let run: string[] = [];
  for (const line of [...observation.split('\n').map((l) => l.trim()), '']) {
    if (isRow(line) && (run.length === 0 || [...line].length === [...run[0]].length)) {
      run.push(line);
      continue;
    }
    if (run.length >= 2) best = run;
    run = isRow(line) ? [line] : [];
  }
  return best;
}

type Cell = [number, number];

function cellsOf(grid: readonly string[], chars: string): Cell[] {
  const out: Cell[] = [];
  grid.forEach((row, r) =>
    [...row].forEach((ch, c) => {
      if (chars.includes(ch)) out.push([r, c]);
    }),
  );
  return out;
}

/** Which way `to` lies from `from`: vertical and horizontal parts, each '' when level. */
function heading(from: Cell, to: Cell): { v: '' | 'up' | 'down'; h: '' | 'left' | 'right' } {
  return {
    v: to[0] < from[0] ? 'up' : to[0] > from[0] ? 'down' : '',
    h: to[1] < from[1] ? 'left' : to[1] > from[1] ? 'right' : '',
  };
}

const DIR = String.raw`(right here|(?:straight )?(?:up|down|left|right)(?: and (?:to the )?(?:up|down|left|right))?)`;

/** Whether a direction phrase describes the heading from `from` to `to`. */
function directionHolds(phrase: string, from: Cell, to: Cell): boolean {
  const { v, h } = heading(from, to);
  if (phrase === 'right here') return v === '' && h === '';
  const straight = phrase.startsWith('straight ');
  const words = phrase
    .replace('straight ', '')
    .replace(' to the ', ' ')
    .split(' and ')
    .map((w) => w.trim());
  const needed = [v, h].filter(Boolean);
  if (straight || words.length === 2)
    return words.length === needed.length && words.every((w) => needed.includes(w as never));
  return needed.includes(words[0] as never); // "push the box up" when it must go up and left: one true part
}

/** Coordinate mentions "(r, c)" or "row r, col c" / "row r col c" / "row r, column c", with their positions. */
function coordinates(text: string): { at: number; cell: Cell }[] {
  const out: { at: number; cell: Cell }[] = [];
  const re = /\((\d+),\s*(\d+)\)|row (\d+),? col(?:umn)? (\d+)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out.push({ at: m.index, cell: m[1] !== undefined ? [Number(m[1]), Number(m[2])] : [Number(m[3]), Number(m[4])] });
  }
  return out;
}

const ENTITY = /\b(player|i am|i'm|me|box|target|goal|hole)\b/g;

/** The entity a coordinate mention is about: the last entity word between the previous mention and this one. */
function entityBefore(text: string, from: number, to: number): string | null {
  let last: string | null = null;
  ENTITY.lastIndex = from;
  for (let m = ENTITY.exec(text); m && m.index < to; m = ENTITY.exec(text)) last = m[1];
  return last === 'i am' || last === "i'm" || last === 'me' ? 'player' : last;
}

function countClaims(think: string, family: Family, facts: StateFacts): ClaimCount {
  const text = think.toLowerCase();
  const result: ClaimCount = { checked: 0, correct: 0 };
  const claim = (ok: boolean) => {
    result.checked++;
    if (ok) result.correct++;
  };
  if (family === 'bandit') {
    if (!facts.bandit) return result;
    const hi = facts.bandit.hi.toLowerCase(),
      lo = facts.bandit.lo.toLowerCase();
    const risky = 'risky|wild|bold|unpredictable|volatile|daring',
      safe = 'safe|steady|calm|reliable|stable|modest';
    const re = new RegExp(
      String.raw`\b(\w+) (?:sounds|feels|seems|is(?: the)?) (?:an? |more )?(${risky}|${safe})\b|name (\w+) suggests an? (${risky}|${safe})`,
      'g',
    );
    for (let m = re.exec(text); m; m = re.exec(text)) {
      const arm = m[1] ?? m[3],
        word = m[2] ?? m[4];
      if (arm !== hi && arm !== lo) continue;
      claim(new RegExp(`^(${risky})$`).test(word) === (arm === hi));
    }
    return result;
  }
  const grid = facts.grid;
  if (grid.length === 0) return result;
  const [player] = cellsOf(grid, family === 'sokoban' ? SOKOBAN.player : FROZENLAKE.player);
  const same = (a: Cell, b: Cell) => a[0] === b[0] && a[1] === b[1];
  const sets: Record<string, Cell[]> =
    family === 'sokoban'
      ? { player: player ? [player] : [], box: cellsOf(grid, SOKOBAN.box), target: cellsOf(grid, SOKOBAN.target) }
      : { player: player ? [player] : [], goal: cellsOf(grid, FROZENLAKE.goal), hole: cellsOf(grid, FROZENLAKE.hole) };
  // Position claims.
  let previous = 0;
  for (const { at, cell } of coordinates(text)) {
    const entity = entityBefore(text, previous, at);
    previous = at + 1;
    if (entity && sets[entity]) claim(sets[entity].some((c) => same(c, cell)));
  }
  // Direction claims: any pair of the named kinds for which it holds (several boxes, targets).
  const pairs = (a: Cell[], b: Cell[], phrase: string) =>
    a.length > 0 && b.length > 0 && a.some((x) => b.some((y) => directionHolds(phrase, x, y)));
  const relations: [RegExp, string, string][] =
    family === 'sokoban'
      ? [
          [new RegExp(String.raw`box (?:must|has to|needs to|should) (?:go|move) ${DIR}`, 'g'), 'box', 'target'],
          [new RegExp(String.raw`push the box ${DIR}`, 'g'), 'box', 'target'],
          [new RegExp(String.raw`target is ${DIR} of the box`, 'g'), 'box', 'target'],
          [new RegExp(String.raw`box is ${DIR} of me`, 'g'), 'player', 'box'],
        ]
      : [[new RegExp(String.raw`goal is ${DIR} of me|goal ${DIR}\b`, 'g'), 'player', 'goal']];
  for (const [re, from, to] of relations) {
    for (let m = re.exec(text); m; m = re.exec(text)) claim(pairs(sets[from], sets[to], (m[1] ?? m[2]).trim()));
  }
  if (family === 'frozenlake' && player) {
    const holesNext = (['left', 'down', 'right', 'up'] as const).filter((d) => {
      const [r, c] = player;
      const n: Cell = d === 'left' ? [r, c - 1] : d === 'right' ? [r, c + 1] : d === 'up' ? [r - 1, c] : [r + 1, c];
      return sets.hole.some((h) => same(h, n));
    });
    if (/no hole (?:is )?(?:next to|beside) me/.test(text)) claim(holesNext.length === 0);
    const re = /hole (?:to the )?((?:left|right|up|down)(?: (?:and|or) (?:left|right|up|down))*)(?: of me)?/g;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      const named = m[1].split(/ (?:and|or) /);
      claim(named.every((d) => holesNext.includes(d as never)));
    }
  }
  return result;
}

/** Checkable claims of one reasoning text about one state, and how many are true. */
export function groundingClaims(tag: string, think: string, facts: StateFacts): ClaimCount {
  const family = familyOf(tag);
  return family ? countClaims(think, family, facts) : { checked: 0, correct: 0 };
}

/** The facts of an observation (grid rows parsed from the text; Bandit names from the env, passed in). */
export function factsOf(tag: string, observation: string, bandit?: { hi: string; lo: string }): StateFacts {
  const family = familyOf(tag);
  return { grid: family && family !== 'bandit' ? gridRows(observation, family) : [], ...(bandit ? { bandit } : {}) };
}

// ---------------------------------------------------------------------------------------------------------------
// Agreement of the reasoning's stated choice with the answer

/** The choice a reasoning text names last: action names after "pick/choose/take/go/move/...", or null. */
export function statedChoice(think: string, actionNames: readonly string[]): string[] | null {
  const names = new Map(actionNames.map((n) => [n.toLowerCase(), n]));
  const re = /\b(?:pick|choose|take|pull|select|go with|i go|i move|moving|next:|plan:|first|i try)\b([^.]*)/gi;
  let last: string[] | null = null;
  for (let m = re.exec(think); m; m = re.exec(think)) {
    const words = m[1].toLowerCase().match(/[a-z]+/g) ?? [];
    const picked = words.filter((w) => names.has(w)).map((w) => names.get(w)!);
    if (picked.length) last = picked;
  }
  return last;
}

// ---------------------------------------------------------------------------------------------------------------
// Batch metrics

/** What the metrics need of an env (structurally: envs/'s Env, with a Bandit's arm names in its config). */
export interface GroundingEnv {
  readonly tag: string;
  readonly actionNames: readonly string[];
  readonly config?: unknown;
}

/** The turns of played trajectories, with what each env says (action names, a Bandit's arms by expectation). */
export function groundingTurnsOf(
  trajectories: readonly {
    envId: number;
    tag: string;
    turns: readonly { state: string; think: string; parsedActions: readonly string[] }[];
  }[],
  envOf: (envId: number) => GroundingEnv,
): GroundingTurn[] {
  return trajectories.flatMap((traj) => {
    const env = envOf(traj.envId);
    const bandit = banditArmsOf(env);
    return traj.turns.map((t) => ({
      tag: traj.tag,
      state: t.state,
      think: t.think,
      actions: t.parsedActions,
      actionNames: env.actionNames,
      ...(bandit ? { bandit } : {}),
    }));
  });
}

/** A Bandit's arm names by expectation, read from its config (undefined for other envs). */
function banditArmsOf(env: GroundingEnv): { hi: string; lo: string } | undefined {
  const c = env.config as { hiArmName?: unknown; loArmName?: unknown } | undefined;
  return typeof c?.hiArmName === 'string' && typeof c?.loArmName === 'string'
    ? { hi: c.hiArmName, lo: c.loArmName }
    : undefined;
}

/**
 * Is one turn's reasoning grounded: at least one checkable claim about the state it saw, and every claim true?
 * (`agent.groundingBonus` rewards such a turn.)
 */
export function isGroundedTurn(env: GroundingEnv, state: string, think: string): boolean {
  const claims = groundingClaims(env.tag, think, factsOf(env.tag, state, banditArmsOf(env)));
  return claims.checked > 0 && claims.correct === claims.checked;
}

export interface GroundingTurn {
  tag: string;
  /** The observation at the start of the turn. */
  state: string;
  think: string;
  /** The answer's actions as parsed. */
  actions: readonly string[];
  actionNames: readonly string[];
  /** Bandit: the env's arm names by expectation. */
  bandit?: { hi: string; lo: string };
}

/**
 * reasoning/grounding, reasoning/grounding_blind and reasoning/answer_agreement over a batch of turns (NaN when no
 * turn has a checkable claim / a stated choice). `blindSeed` picks the other state each claim is checked against.
 */
export function groundingMetrics(turns: readonly GroundingTurn[], blindSeed = 0): Record<string, number> {
  let checked = 0,
    correct = 0,
    blindChecked = 0,
    blindCorrect = 0,
    stated = 0,
    agreed = 0;
  const byTag = new Map<string, number[]>();
  turns.forEach((t, i) => byTag.set(t.tag, [...(byTag.get(t.tag) ?? []), i]));
  let state = blindSeed >>> 0;
  const next = () => ((state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0), state);
  turns.forEach((t, i) => {
    if (t.think.trim() === '') return;
    const own = groundingClaims(t.tag, t.think, factsOf(t.tag, t.state, t.bandit));
    checked += own.checked;
    correct += own.correct;
    const others = (byTag.get(t.tag) ?? []).filter((j) => j !== i && turns[j].state !== t.state);
    if (own.checked > 0 && others.length > 0) {
      const o = turns[others[next() % others.length]];
      const blind = groundingClaims(t.tag, t.think, factsOf(o.tag, o.state, o.bandit));
      blindChecked += blind.checked;
      blindCorrect += blind.correct;
    }
    const choice = statedChoice(t.think, t.actionNames);
    if (choice) {
      stated++;
      const answer = t.actions.map((a) => a.toLowerCase());
      if (choice.length === answer.length && choice.every((c, k) => c.toLowerCase() === answer[k])) agreed++;
    }
  });
  return {
    'reasoning/grounding': checked ? correct / checked : NaN,
    'reasoning/grounding_blind': blindChecked ? blindCorrect / blindChecked : NaN,
    'reasoning/grounding_claims': turns.length ? checked / turns.length : NaN,
    'reasoning/answer_agreement': stated ? agreed / stated : NaN,
  };
}
