// Solver-written demonstrations for the warm start of the tiny presets (docs/architecture.md "The policy and its warm
// start").
//
// RAGEN starts from an instruct model that already writes `<think>…</think><answer>…</answer>`. A tiny model
// starts from nothing, so `ragen warmstart` first teaches it the format by supervised fine-tuning on episodes played
// by a scripted demonstrator through the real agent protocol (EnvGroupManager: action mapping, budget, format
// penalty; buildPrompt in 'compact' style and 'training' mode: the exact text and loss mask the trainer uses).
//
// The demonstrator is deliberately NOT an expert, because the warm start is the starting point of RL:
// * its actions are imperfect: each primitive action is, with probability `imperfectFraction`, replaced by a
//   random other action (Sokoban, FrozenLake) or the low-risk arm is chosen (Bandit), so RL has room to improve;
// * its reasoning is varied: several templates and paraphrases picked by a seeded RNG, each mentioning the state
//   (where the player, box, target, goal and holes are; which arm name sounds risky), so reasoning has diversity
//   that the echo trap can visibly collapse.
// Per action the demonstrator replans from a simulated copy of the state (the BFS solver for Sokoban; value
// iteration for FrozenLake, assuming intended moves inside one answer), so one bad action does not spoil the rest.
//
// Seeds: demonstrations use env seeds from DEMO_SEED_BASE = 1,000,000 upwards, disjoint from RAGEN's training seeds
// (10000 + 8·k, i.e. 10000 … 11599 over 200 steps) and validation seeds (123 … 378), so the warm start never saw
// an initial state that training or validation will show it. (With `agent.seedTrain: null`, RAGEN's random
// training bases lie in [0, 1,000,000], so only a draw within envGroups of the top could touch the first demo seeds.)
//
// Pure TypeScript: no tfjs here (the SFT itself lives in warmstart.ts).
import {
  Rng,
  FROZENLAKE_ACTIONS,
  SOKOBAN_ACTIONS,
  applyMove,
  cloneState,
  moveOnLake,
  planFrozenLake,
  solveSokoban,
  BanditEnv,
  FrozenLakeEnv,
  SokobanEnv,
  type FrozenLakeMap,
  type SokobanState,
} from '../../envs/index';
import { BOX, BOX_ON_TARGET, TARGET } from '../../envs/sokoban/grid';
import {
  EnvGroupManager,
  buildPrompt,
  envRegistry,
  parseResponse,
  turnTrainingSamples,
  type RenderedPrompt,
  type TurnNumbers,
} from '../agent/index';

/** First env seed of the demonstrations: far above RAGEN's train (10000+) and val (123 … 378) seeds. */
export const DEMO_SEED_BASE = 1_000_000;

/**
 * Arm-name pairs (low-risk first) mixed into Bandit demonstrations besides the tag's own pair, so that the warm
 * start learns to copy the arm names it reads in the prompt instead of memorising two words. Adapted from RAGEN-2's
 * training pairs; BanditTest's names (Trader, Librarian) are left out on purpose, so validation on BanditTest still
 * measures generalisation to unseen names.
 */
export const DEMO_BANDIT_ARM_PAIRS: readonly (readonly [lo: string, hi: string])[] = [
  ['Teacher', 'Engineer'],
  ['Nurse', 'StartupFounder'],
  ['Accountant', 'StockBroker'],
  ['Pharmacist', 'Musician'],
  ['Clerk', 'Freelancer'],
  ['Technician', 'Youtuber'],
  ['Planner', 'Artist'],
  ['Postman', 'Pilot'],
  ['Banker', 'VentureCapitalist'],
  ['Gardener', 'Cryptominer'],
];

export interface DemonstrationConfig {
  /** Env tag to play (Bandit, BanditTest, FrozenLake or a Sokoban tag). */
  tag: string;
  /** Env config passed to makeEnv (camelCase keys); undefined = the tag's RAGEN defaults. */
  envConfig?: Record<string, unknown>;
  /** Number of episodes (one demonstration each). */
  episodes: number;
  /** Env seed of the first episode; episode i uses firstSeed + i. Default DEMO_SEED_BASE. */
  firstSeed?: number;
  /** RAGEN `max_turn`: most turns per episode. */
  maxTurn: number;
  /** RAGEN `max_actions_per_turn`: most actions one answer may hold (the parser drops the rest). */
  maxActionsPerTurn: number;
  /** Override of the tag's `max_actions_per_traj` (the episode's action budget). */
  maxActionsPerTraj?: number;
  /**
   * [fewest, most] actions the demonstrator writes per answer, each clipped to maxActionsPerTurn and the budget
   * left. Default [1, maxActionsPerTurn].
   */
  actionsPerAnswer?: readonly [number, number];
  /**
   * Probability that a primitive action is deliberately imperfect: a random other action (grid envs), or the
   * low-risk arm (Bandit, where the "perfect" action is the high-risk arm, RAGEN's success criterion).
   */
  imperfectFraction: number;
  /** Bandit only: fraction of episodes played with a pair from `armNamePairs` instead of the tag's own names. */
  alternateArmPairFraction?: number;
  /** Bandit only: the alternative pairs (default DEMO_BANDIT_ARM_PAIRS). */
  armNamePairs?: readonly (readonly [lo: string, hi: string])[];
  /** RAGEN `action_sep` (default `||`). */
  actionSep?: string;
  /** RAGEN `enable_response_mask` (default true: only assistant turns are trainable). */
  responseMaskOnly?: boolean;
  /**
   * RAGEN `agent_proxy.max_context_window` of the run the demonstrations are for (default -1, the full history).
   * With k >= 1 the policy only ever sees the last k turns, so each turn becomes its own training sample rendered
   * that way (see Demonstration.samples).
   */
  maxContextWindow?: number;
  /** How the prompts number their turns (default 'window', RAGEN's); the run's agent.turnNumbers. */
  turnNumbers?: TurnNumbers;
}

/**
 * How the demonstrator chose one action: from the plan, deliberately imperfect, or at random because no plan
 * exists any more (e.g. a box pushed into a corner). Only 'plan' and 'imperfect' count for the imperfect fraction.
 */
export type ActionKind = 'plan' | 'imperfect' | 'noPlan';

export interface DemoTurn {
  /** State text at the start of the turn. */
  state: string;
  /** The reasoning written between <think> and </think>. */
  think: string;
  /** Actions written in the answer, in order. */
  actions: string[];
  /** How each action of `actions` was chosen. */
  kinds: ActionKind[];
  /** Actions the env executed (a prefix of `actions`: the episode may end early or run out of budget). */
  executed: string[];
  /** Summed env reward of the executed actions. */
  reward: number;
  /** The response as stored and trained on: `<think>…</think><answer>a || b</answer>`. */
  response: string;
}

export interface Demonstration {
  tag: string;
  /** The env seed of the episode (>= DEMO_SEED_BASE by default). */
  seed: number;
  /** The env config the episode was played with (Bandit: the arm names used). */
  envConfig?: Record<string, unknown>;
  turns: DemoTurn[];
  success: boolean;
  /** Sum of turn rewards, without the format penalty (RAGEN `original_rm_scores`). */
  totalReward: number;
  /** Format penalty accumulated by the manager (0 for a demonstrator that always writes valid answers). */
  penalty: number;
  /** The episode in training mode: compact prompt text and trainable segments (the full history). */
  training: RenderedPrompt;
  /**
   * What SFT tokenizes: [training] for the full history; with a context window of k turns, one sample per turn,
   * rendered as the policy sees that turn (the last k turns) and trainable on that turn's response only, so every
   * response is trained on once and always after the prompt it answers at generation time.
   */
  samples: RenderedPrompt[];
}

// ---------------------------------------------------------------------------------------------------------------
// Episodes

function checkConfig(c: DemonstrationConfig): void {
  const posInt = (v: number, name: string) => {
    if (!Number.isInteger(v) || v < 1) throw new Error(`demonstrations: ${name} must be a positive integer, got ${v}`);
  };
  posInt(c.episodes, 'episodes');
  posInt(c.maxTurn, 'maxTurn');
  posInt(c.maxActionsPerTurn, 'maxActionsPerTurn');
  if (c.maxActionsPerTraj !== undefined) posInt(c.maxActionsPerTraj, 'maxActionsPerTraj');
  if (!(c.imperfectFraction >= 0 && c.imperfectFraction <= 1)) {
    throw new Error(`demonstrations: imperfectFraction must be in [0, 1], got ${c.imperfectFraction}`);
  }
  const alt = c.alternateArmPairFraction ?? 0;
  if (!(alt >= 0 && alt <= 1))
    throw new Error(`demonstrations: alternateArmPairFraction must be in [0, 1], got ${alt}`);
  if (c.actionsPerAnswer) {
    const [lo, hi] = c.actionsPerAnswer;
    if (!Number.isInteger(lo) || !Number.isInteger(hi) || lo < 1 || hi < lo) {
      throw new Error(
        `demonstrations: actionsPerAnswer must be [fewest, most] with 1 <= fewest <= most, got [${lo}, ${hi}]`,
      );
    }
  }
  if (c.firstSeed !== undefined && !Number.isSafeInteger(c.firstSeed)) {
    throw new Error(`demonstrations: firstSeed must be an integer, got ${c.firstSeed}`);
  }
}

/** Plays `config.episodes` demonstration episodes through the agent protocol. Deterministic given the config. */
export function generateDemonstrations(config: DemonstrationConfig): Demonstration[] {
  checkConfig(config);
  const firstSeed = config.firstSeed ?? DEMO_SEED_BASE;
  const demos: Demonstration[] = [];
  for (let i = 0; i < config.episodes; i++) demos.push(playEpisode(config, firstSeed + i));
  return demos;
}

function playEpisode(config: DemonstrationConfig, seed: number): Demonstration {
  const actionSep = config.actionSep ?? '||';
  // One RNG per episode, so an episode does not depend on which other episodes were generated.
  const rng = Rng.fromSeed(seed, `demonstrator/${config.tag}`);
  const envConfig = episodeEnvConfig(config, rng);
  const manager = new EnvGroupManager(
    {
      mode: 'val',
      envGroups: 1,
      groupSize: 1,
      baseSeed: seed,
      tags: [{ tag: config.tag, nGroups: 1, config: envConfig, maxActionsPerTraj: config.maxActionsPerTraj }],
    },
    envRegistry(),
  );
  manager.reset();
  const entry = manager.entries[0];
  const turns: DemoTurn[] = [];

  for (let turn = 1; turn <= config.maxTurn && manager.activeRollouts().length > 0; turn++) {
    const rollout = manager.allRollouts()[0];
    const current = rollout.history[rollout.history.length - 1];
    const perAnswer = config.actionsPerAnswer ?? [1, config.maxActionsPerTurn];
    const wanted = Math.min(rng.intBetween(perAnswer[0], perAnswer[1]), config.maxActionsPerTurn, current.actionsLeft);
    const { think, actions, kinds } = demonstrate(entry.env, Math.max(1, wanted), current.actionsLeft, config, rng);
    const text = `<think>${think}</think><answer>${actions.join(` ${actionSep} `)}</answer>`;
    const parsed = parseResponse(text, { maxActionsPerTurn: config.maxActionsPerTurn, actionSep });
    manager.step([{ envId: 0, actions: parsed.actions, llmResponse: parsed.reconstructed, llmRawResponse: text }]);
    const played = manager.allRollouts()[0].history[turn - 1];
    turns.push({
      state: current.state,
      think,
      actions,
      kinds,
      executed: played.actions ?? [],
      reward: played.reward ?? 0,
      response: parsed.reconstructed,
    });
  }

  const [state] = manager.rolloutStates();
  const promptOptions = {
    style: 'compact',
    mode: 'training',
    actionSep,
    responseMaskOnly: config.responseMaskOnly ?? true,
    turnNumbers: config.turnNumbers,
  } as const;
  const training = buildPrompt(entry.info, state.history, promptOptions);
  const window = config.maxContextWindow ?? -1;
  return {
    tag: config.tag,
    seed,
    ...(envConfig ? { envConfig } : {}),
    turns,
    success: state.success,
    totalReward: state.totalReward,
    penalty: state.penalty,
    training,
    samples:
      window < 1
        ? [training]
        : turnTrainingSamples(entry.info, state.history, { ...promptOptions, maxContextWindow: window }),
  };
}

/** The env config of one episode: the configured one, or for Bandit possibly an alternative arm-name pair. */
function episodeEnvConfig(config: DemonstrationConfig, rng: Rng): Record<string, unknown> | undefined {
  const isBandit = config.tag === 'Bandit' || config.tag === 'BanditTest';
  const alt = config.alternateArmPairFraction ?? 0;
  if (!isBandit || alt === 0) return config.envConfig;
  // Drawn for every Bandit episode, whatever the outcome, so the RNG stream does not depend on the fraction's branch.
  const u = rng.float();
  const pair = rng.choice(config.armNamePairs ?? DEMO_BANDIT_ARM_PAIRS);
  if (u >= alt) return config.envConfig;
  return { ...config.envConfig, loArmName: pair[0], hiArmName: pair[1] };
}

interface Answer {
  think: string;
  actions: string[];
  kinds: ActionKind[];
}

function demonstrate(env: unknown, wanted: number, actionsLeft: number, config: DemonstrationConfig, rng: Rng): Answer {
  if (env instanceof BanditEnv) return banditAnswer(env, config.imperfectFraction, rng);
  if (env instanceof FrozenLakeEnv) return frozenLakeAnswer(env, wanted, actionsLeft, config.imperfectFraction, rng);
  if (env instanceof SokobanEnv) return sokobanAnswer(env, wanted, actionsLeft, config.imperfectFraction, rng);
  throw new Error(`demonstrations: no demonstrator for env '${config.tag}'`);
}

/** A uniformly random action name other than `avoid`. */
function otherAction(names: readonly string[], avoid: string, rng: Rng): string {
  return rng.choice(names.filter((n) => n !== avoid));
}

// ---------------------------------------------------------------------------------------------------------------
// Bandit

const RISKY_WORDS = ['risky', 'wild', 'bold', 'unpredictable', 'volatile', 'daring'];
const SAFE_WORDS = ['safe', 'steady', 'calm', 'reliable', 'stable', 'modest'];

function banditAnswer(env: BanditEnv, imperfectFraction: number, rng: Rng): Answer {
  const { loArmName: lo, hiArmName: hi } = env.config;
  const imperfect = rng.float() < imperfectFraction;
  const chosen = imperfect ? lo : hi;
  return {
    think: banditThink(lo, hi, chosen === hi, rng),
    actions: [chosen],
    kinds: [imperfect ? 'imperfect' : 'plan'],
  };
}

/** Reasoning that names which arm sounds risky and which safe, then argues for the chosen one. */
export function banditThink(lo: string, hi: string, choseHigh: boolean, rng: Rng): string {
  const risky = rng.choice(RISKY_WORDS);
  const safe = rng.choice(SAFE_WORDS);
  const article = (word: string) => (/^[aeiou]/.test(word) ? 'an' : 'a');
  const opening = rng.choice([
    `${hi} sounds ${risky} and ${lo} sounds ${safe}.`,
    `${lo} feels ${safe}, while ${hi} feels ${risky}.`,
    `The name ${hi} suggests ${article(risky)} ${risky} payoff; ${lo} suggests ${article(safe)} ${safe} one.`,
    `${hi} is the ${risky} arm and ${lo} is the ${safe} arm.`,
    `Between ${lo} and ${hi}, ${hi} seems more ${risky}.`,
  ]);
  // Every closing names the chosen arm after "pick" or "choose": the answer repeats it, so the choice is made in
  // the reasoning (reasoning/answer_agreement checks that it stays so after RL).
  const closing = choseHigh
    ? rng.choice([
        `${article(risky) === 'an' ? 'An' : 'A'} ${risky} arm can pay more on average, so I pick ${hi}.`,
        `I take the chance, so I pick ${hi}.`,
        `Big rewards need risk, so I choose ${hi}.`,
        `${hi} may give the higher average reward, so I choose ${hi}.`,
      ])
    : rng.choice([
        `I prefer ${article(safe)} ${safe} reward, so I pick ${lo}.`,
        `${lo} always pays something, so I choose ${lo}.`,
        `I avoid the risk, so I pick ${lo}.`,
        `A sure reward is better for me, so I choose ${lo}.`,
      ]);
  return `${opening} ${closing}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Grid helpers

/** Direction from (r0, c0) to (r1, c1) in words, e.g. "up and to the left", "straight down", "right here". */
function relativeDirection(r0: number, c0: number, r1: number, c1: number): string {
  const vertical = r1 < r0 ? 'up' : r1 > r0 ? 'down' : '';
  const horizontal = c1 < c0 ? 'left' : c1 > c0 ? 'right' : '';
  if (vertical && horizontal) return `${vertical} and to the ${horizontal}`;
  if (vertical || horizontal) return `straight ${vertical || horizontal}`;
  return 'right here';
}

// ---------------------------------------------------------------------------------------------------------------
// FrozenLake

function frozenLakeAnswer(
  env: FrozenLakeEnv,
  wanted: number,
  actionsLeft: number,
  imperfectFraction: number,
  rng: Rng,
): Answer {
  const map = env.map;
  const planner = planFrozenLake(map, env.config.successRate, actionsLeft);
  let position = env.position;
  let left = actionsLeft;
  const actions: string[] = [];
  const kinds: ActionKind[] = [];
  // Plan the answer open-loop along the intended moves; the env's slips are the next turn's problem.
  while (actions.length < wanted && left > 0) {
    const best = planner.bestAction(position, left);
    if (best === null) break; // on the goal or in a hole (in the simulation): nothing left to decide
    const noPath = planner.successProbability(position, left) === 0;
    let action = best;
    let kind: ActionKind = noPath ? 'noPlan' : 'plan';
    if (noPath) action = rng.choice(FROZENLAKE_ACTIONS);
    else if (rng.float() < imperfectFraction) {
      action = otherAction(FROZENLAKE_ACTIONS, best, rng);
      kind = 'imperfect';
    }
    actions.push(action);
    kinds.push(kind);
    position = moveOnLake(map, position, FROZENLAKE_ACTIONS.indexOf(action as (typeof FROZENLAKE_ACTIONS)[number]));
    left--;
    if (map.holes[position] || position === map.goal) break;
  }
  if (actions.length === 0) {
    // Only reachable when the episode is already over, which the manager never asks about; stay well-formed anyway.
    actions.push(rng.choice(FROZENLAKE_ACTIONS));
    kinds.push('noPlan');
  }
  return { think: frozenLakeThink(map, env.position, actions, rng), actions, kinds };
}

/** Holes next to `cell`, as direction words ("left", "down", ...). */
function adjacentHoles(map: FrozenLakeMap, cell: number): string[] {
  const words = ['left', 'down', 'right', 'up'];
  const out: string[] = [];
  for (let d = 0; d < 4; d++) {
    const next = moveOnLake(map, cell, d);
    if (next !== cell && map.holes[next]) out.push(words[d]);
  }
  return out;
}

/**
 * Reasoning about a FrozenLake state, every sentence a checkable claim (src/metrics/grounding.ts): where the player
 * and the goal are, which way the goal lies, which neighbouring cells are holes. It says nothing about the moves:
 * the answer follows it, so what the reasoning says is about the board, and what RL can improve is the choice.
 */
export function frozenLakeThink(map: FrozenLakeMap, position: number, _actions: readonly string[], rng: Rng): string {
  const [r, c] = [Math.floor(position / map.cols), position % map.cols];
  const [gr, gc] = [Math.floor(map.goal / map.cols), map.goal % map.cols];
  const direction = relativeDirection(r, c, gr, gc);
  const holes = adjacentHoles(map, position);
  const holeNote = holes.length === 0 ? 'No hole is next to me.' : `There is a hole ${holes.join(' and ')} of me.`;
  return rng.choice([
    `I am at (${r}, ${c}) and the goal is at (${gr}, ${gc}). ${holeNote}`,
    `The goal is ${direction} of me. ${holeNote}`,
    `I am at (${r}, ${c}). The goal is ${direction} of me. ${holeNote}`,
  ]);
}

// ---------------------------------------------------------------------------------------------------------------
// Sokoban

function sokobanAnswer(
  env: SokobanEnv,
  wanted: number,
  actionsLeft: number,
  imperfectFraction: number,
  rng: Rng,
): Answer {
  const sim = cloneState(env.state);
  const actions: string[] = [];
  const kinds: ActionKind[] = [];
  let left = actionsLeft;
  while (actions.length < wanted && left > 0) {
    // Prefer a plan that fits the budget; else any plan (still the best direction to move in).
    const plan = solveSokoban(sim, left) ?? solveSokoban(sim, 100);
    if (plan !== null && plan.length === 0) break; // solved in the simulation
    let action: string;
    let kind: ActionKind;
    if (plan === null) {
      action = rng.choice(SOKOBAN_ACTIONS);
      kind = 'noPlan';
    } else if (rng.float() < imperfectFraction) {
      action = otherAction(SOKOBAN_ACTIONS, plan[0], rng);
      kind = 'imperfect';
    } else {
      action = plan[0];
      kind = 'plan';
    }
    actions.push(action);
    kinds.push(kind);
    applyMove(sim, SOKOBAN_ACTIONS.indexOf(action as (typeof SOKOBAN_ACTIONS)[number]));
    left--;
  }
  if (actions.length === 0) {
    actions.push(rng.choice(SOKOBAN_ACTIONS));
    kinds.push('noPlan');
  }
  return { think: sokobanThink(env.state, actions, rng), actions, kinds };
}

function cellsWhere(state: SokobanState, test: (cell: number) => boolean): number[] {
  const out: number[] = [];
  for (let cell = 0; cell < state.cells.length; cell++) if (test(cell)) out.push(cell);
  return out;
}

/**
 * Reasoning about a Sokoban state, every sentence a checkable claim (src/metrics/grounding.ts): where the player, the
 * box and its target are, which way the box must go, which way the box lies from the player. For several boxes it
 * talks about the box nearest to a free target. Like frozenLakeThink it describes the board, not the moves.
 */
export function sokobanThink(state: SokobanState, _actions: readonly string[], rng: Rng): string {
  const rc = (cell: number) => [Math.floor(cell / state.cols), cell % state.cols] as const;
  const boxes = cellsWhere(state, (cell) => state.cells[cell] === BOX);
  const targets = cellsWhere(state, (cell) => state.fixed[cell] === TARGET && state.cells[cell] !== BOX_ON_TARGET);
  const [pr, pc] = rc(state.player);
  if (boxes.length === 0 || targets.length === 0) return `Every box is on a target. I am at (${pr}, ${pc}).`;
  let best: [number, number] = [boxes[0], targets[0]];
  let bestDistance = Infinity;
  for (const b of boxes) {
    for (const t of targets) {
      const [br, bc] = rc(b);
      const [tr, tc] = rc(t);
      const d = Math.abs(br - tr) + Math.abs(bc - tc);
      if (d < bestDistance) [best, bestDistance] = [[b, t], d];
    }
  }
  const [br, bc] = rc(best[0]);
  const [tr, tc] = rc(best[1]);
  const boxWay = relativeDirection(br, bc, tr, tc);
  const toBox = relativeDirection(pr, pc, br, bc);
  return rng.choice([
    `I am at (${pr}, ${pc}), the box at (${br}, ${bc}) and the target at (${tr}, ${tc}). The box must go ${boxWay}.`,
    `The box is at (${br}, ${bc}) and the target at (${tr}, ${tc}), so the box must go ${boxWay}.`,
    `The box is ${toBox} of me and the target is ${boxWay} of the box.`,
    `I am at (${pr}, ${pc}) and the box is ${toBox} of me. The box must go ${boxWay}.`,
  ]);
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics of a set of demonstrations

export interface DemonstrationStats {
  episodes: number;
  /** Fraction of episodes that succeeded. */
  successRate: number;
  /** imperfect / (plan + imperfect) over all written actions; 'noPlan' actions are not counted. */
  imperfectFraction: number;
  /** Turns played in total. */
  turns: number;
  /** Distinct reasoning texts / turns. */
  distinctThinkFraction: number;
  /** Actions written per answer, on average. */
  actionsPerAnswer: number;
}

export function demonstrationStats(demos: readonly Demonstration[]): DemonstrationStats {
  let plan = 0;
  let imperfect = 0;
  let turns = 0;
  let actions = 0;
  const thinks = new Set<string>();
  for (const demo of demos) {
    for (const turn of demo.turns) {
      turns++;
      actions += turn.actions.length;
      thinks.add(turn.think);
      for (const kind of turn.kinds) {
        if (kind === 'plan') plan++;
        else if (kind === 'imperfect') imperfect++;
      }
    }
  }
  return {
    episodes: demos.length,
    successRate: demos.length ? demos.filter((d) => d.success).length / demos.length : 0,
    imperfectFraction: plan + imperfect > 0 ? imperfect / (plan + imperfect) : 0,
    turns,
    distinctThinkFraction: turns ? thinks.size / turns : 0,
    actionsPerAnswer: turns ? actions / turns : 0,
  };
}
