// The multi-turn rollout loop (RAGEN agent_proxy.rollout, spec §4.2 step 1–2), independent of any model:
// reset every env; for turn = 1..maxTurn, build a prompt for each still-running env, ask `generate` for the
// continuations, parse them, step the envs; stop early when every env is done. Then render each trajectory in
// training mode (the text and segments the trainer tokenizes and masks).
//
// Envs still running after maxTurn are simply left unfinished: they count as not successful, as in RAGEN.
//
// A policy with a `continuous` engine (rollout.engine 'continuous') plays the dialogues on their own instead: each
// env steps as soon as its own turn's answer is sampled, and its next prompt goes back to the engine while the other
// dialogues are still generating (continuous batching, src/model/continuousBatching.ts). Each env sees the same
// prompts and plays the same turns as turn by turn; only the order in which envs step differs, and envs do not
// share state.
import { EnvGroupManager, summarizeEnvMetrics } from './envGroups';
import type { EnvRollout, EnvTurnInput, RolloutState } from './envGroups';
import { parseResponse, restoreForcedPrefix } from './parse';
import { buildPrompt, turnTrainingSamples } from './prompt';
import type { PromptStyle, RenderedPrompt, TurnNumbers } from './prompt';
import type { StepInfo } from '../../envs/types';

/** Which dialogue each prompt continues: the env id of each prompt and the turn (1-based) of the rollout. */
export interface GenerateContext {
  keys: readonly number[];
  turn: number;
  /**
   * Progress: a policy that generates token by token may report the tokens decoded so far (of at most
   * `maxTokens`) as it goes. It awaits the call, so a throw from it abandons the generation.
   */
  onTokens?: (decoded: number, maxTokens: number) => void | Promise<void>;
}

/**
 * The policy as the loop sees it: prompts (rendered text ending in the forced `<think>`) in, sampled
 * continuations out, one per prompt, in the same order. The continuation excludes the forced tag. With `context`,
 * a policy may keep state across the turns of one rollout batch (a KV cache per env); `release` then frees it, and
 * the loop calls it when the batch ends.
 */
export interface GenerateFn {
  (prompts: string[], context?: GenerateContext): Promise<string[]>;
  release?: () => void;
  /** Present when the policy can play the dialogues on their own (continuous batching); runRollouts then uses it. */
  continuous?: ContinuousGenerate;
}

/**
 * A policy that plays every dialogue of a rollout batch at its own pace: `first` holds each dialogue's first prompt
 * (key: env id). `onTurnEnd` is called as soon as a dialogue's turn is sampled, with the continuation (as a
 * GenerateFn returns it); it answers with the dialogue's next prompt, or null when the dialogue is over. Resolves
 * when every dialogue is over; a throw from `onTurnEnd` or `onTokens` abandons the batch.
 */
export type ContinuousGenerate = (
  first: readonly { key: number; prompt: string }[],
  onTurnEnd: (key: number, output: string) => string | null,
  options: {
    maxTurn: number;
    /** Progress: the tokens sampled so far per dialogue (the mean), of at most maxTurn x maxTokens. */
    onTokens?: (decoded: number, maxTokens: number) => void | Promise<void>;
  },
) => Promise<void>;

export interface RolloutOptions {
  /** RAGEN `agent_proxy.max_turn` (default 5; Bandit 1). */
  maxTurn?: number;
  /** RAGEN `agent_proxy.max_actions_per_turn` (default 5). */
  maxActionsPerTurn?: number;
  /** RAGEN `enable_think` (default true). */
  enableThink?: boolean;
  /** RAGEN `action_sep` (default `||`). */
  actionSep?: string;
  /** 'ragen' (default) or 'compact' prompt wording. */
  promptStyle?: PromptStyle;
  /** RAGEN `max_context_window` (default: full history). */
  maxContextWindow?: number;
  /** How prompts number their turns (default 'window', RAGEN's). */
  turnNumbers?: TurnNumbers;
  /**
   * RAGEN-2 `context_window_mode`: 'full' (default) trains each trajectory as one sequence; 'single_turn' also
   * renders every turn as its own training sample (Trajectory.turnSamples).
   */
  contextWindowMode?: ContextWindowMode;
  /** RAGEN `enable_response_mask` (default true = train only assistant turns; false = the paper's setting). */
  responseMaskOnly?: boolean;
  /** Explicit base seed for this reset (default: the manager's seed schedule). */
  seed?: number;
  /**
   * Progress in tokens of the batch's budget: `done` = tokens generated in the turns so far (each turn counted up
   * to where its longest answer stopped), `total` = maxTurn x the policy's tokens per turn. Awaited; a throw
   * abandons the rollout (the envs are reset by the next one anyway).
   */
  onProgress?: (done: number, total: number) => void | Promise<void>;
}

/**
 * How an agent talks, as a run sets it: everything runRollouts needs (every limit spelled out) plus the two numbers
 * that shape an env group around it. The Trainer, the playground's single episodes, the warm-start check and the
 * scorecard all play with the AgentFormat of their RunConfig (agentFormatFromConfig, src/starpo/config/agent.ts).
 */
export interface AgentFormat extends RolloutOptions {
  maxTurn: number;
  maxActionsPerTurn: number;
  enableThink: boolean;
  actionSep: string;
  promptStyle: PromptStyle;
  maxContextWindow: number;
  turnNumbers: TurnNumbers;
  contextWindowMode: ContextWindowMode;
  /** Printed as "Max response length" for tags without their own max_tokens (Bandit); the token limit per turn. */
  responseLength: number;
  /** RAGEN `format_penalty`: added to the score of a trajectory with a malformed turn. */
  formatPenalty: number;
}

/** One turn of one trajectory, for logs, the rollout viewer and metrics such as reasoning length. */
export interface TurnRecord {
  /** 1-based turn number. */
  turn: number;
  /** State the model saw at the start of the turn. */
  state: string;
  /** The full generation prompt (rendered text). */
  prompt: string;
  /** Sampled text with the forced tag restored. */
  rawResponse: string;
  think: string;
  answer: string;
  formatOk: boolean;
  /** Actions parsed from the answer (before name mapping and budget). */
  parsedActions: string[];
  /** Actions the env executed. */
  executedActions: string[];
  /** Summed env reward of the turn (no penalty). */
  reward: number;
  /** Info of the last executed action, or null. */
  info: StepInfo | null;
  /** The trained-on response text. */
  response: string;
}

/** RAGEN-2's `agent_proxy.context_window_mode`, the two of its modes this project has. */
export type ContextWindowMode = 'full' | 'single_turn';

export interface Trajectory extends RolloutState {
  turns: TurnRecord[];
  /** The trajectory in training mode: text + segments for tokenizing and loss masking. Null if no turn was played. */
  training: RenderedPrompt | null;
  /** contextWindowMode 'single_turn': one training sample per played turn (turnTrainingSamples); else null. */
  turnSamples: RenderedPrompt[] | null;
}

export interface RolloutResult {
  trajectories: Trajectory[];
  /** Batch means of per-env metrics, RAGEN keys without a prefix (`<Tag>/success`, `<Tag>/pass@k`, …). */
  envMetrics: Record<string, number>;
  /** Turns actually played (≤ maxTurn). */
  turnsPlayed: number;
}

/** Run one batch of rollouts over every env of the manager. */
export async function runRollouts(
  manager: EnvGroupManager,
  generate: GenerateFn,
  options: RolloutOptions = {},
): Promise<RolloutResult> {
  const maxTurn = options.maxTurn ?? 5;
  const enableThink = options.enableThink ?? true;
  const parseOptions = {
    enableThink,
    maxActionsPerTurn: options.maxActionsPerTurn ?? 5,
    actionSep: options.actionSep ?? '||',
  };
  const promptOptions = {
    style: options.promptStyle ?? 'ragen',
    enableThink,
    actionSep: parseOptions.actionSep,
    maxContextWindow: options.maxContextWindow,
    turnNumbers: options.turnNumbers,
    responseMaskOnly: options.responseMaskOnly,
  } as const;
  if (!Number.isInteger(maxTurn) || maxTurn < 1)
    throw new Error(`runRollouts: maxTurn must be a positive integer, got ${maxTurn}`);

  let active = manager.reset(options.seed);
  const turnsByEnv = new Map<number, TurnRecord[]>(manager.entries.map((e) => [e.envId, []]));
  let turnsPlayed = 0;
  const promptOf = (r: EnvRollout) =>
    buildPrompt(manager.entries[r.envId].info, r.history, { ...promptOptions, mode: 'generation' }).text;
  // Parses a turn's output, records the turn and returns what the env is to play.
  const recordTurn = (rollout: EnvRollout, turn: number, prompt: string, output: string): EnvTurnInput => {
    const raw = restoreForcedPrefix(output, enableThink);
    const parsed = parseResponse(raw, parseOptions);
    turnsByEnv.get(rollout.envId)!.push({
      turn,
      state: rollout.history[rollout.history.length - 1].state,
      prompt,
      rawResponse: raw,
      think: parsed.think,
      answer: parsed.answer,
      formatOk: parsed.formatOk,
      parsedActions: parsed.actions,
      executedActions: [],
      reward: 0,
      info: null,
      response: parsed.reconstructed,
    });
    return {
      envId: rollout.envId,
      actions: parsed.actions,
      llmResponse: parsed.reconstructed,
      llmRawResponse: raw,
      think: parsed.think,
    };
  };
  // Copies what the env did back into its last turn record (the history record of that turn is the second to last).
  const recordStep = (rollout: EnvRollout) => {
    const played = rollout.history[rollout.history.length - 2];
    const records = turnsByEnv.get(rollout.envId)!;
    const record = records[records.length - 1];
    record.executedActions = played.actions ?? [];
    record.reward = played.reward ?? 0;
    record.info = played.info ?? null;
  };

  try {
    if (generate.continuous && active.length > 0) {
      const played = new Map<number, { turn: number; prompt: string }>();
      const rollouts = manager.allRollouts();
      const first = active.map((r) => {
        const prompt = promptOf(r);
        played.set(r.envId, { turn: 1, prompt });
        return { key: r.envId, prompt };
      });
      const onTokens = options.onProgress
        ? (decoded: number, maxTokens: number) =>
            options.onProgress!(Math.min(decoded, maxTurn * maxTokens), maxTurn * maxTokens)
        : undefined;
      await generate.continuous(
        first,
        (key, output) => {
          const at = played.get(key);
          if (!at) throw new Error(`runRollouts: the policy ended a turn of env ${key}, which is not playing`);
          if (typeof output !== 'string') throw new Error(`runRollouts: output for env ${key} is ${typeof output}`);
          const rollout = rollouts[key];
          manager.step([recordTurn(rollout, at.turn, at.prompt, output)]);
          recordStep(rollout);
          turnsPlayed = Math.max(turnsPlayed, at.turn);
          if (rollout.status.terminated || at.turn >= maxTurn) {
            played.delete(key);
            return null;
          }
          const prompt = promptOf(rollout);
          played.set(key, { turn: at.turn + 1, prompt });
          return prompt;
        },
        { maxTurn, onTokens },
      );
      if (played.size) throw new Error(`runRollouts: the policy left env(s) ${[...played.keys()].join(', ')} unplayed`);
    }
    for (let turn = 1; turn <= maxTurn && active.length > 0 && !generate.continuous; turn++) {
      const prompts = active.map(promptOf);
      const onTokens = options.onProgress
        ? (decoded: number, maxTokens: number) =>
            options.onProgress!((turn - 1) * maxTokens + decoded, maxTurn * maxTokens)
        : undefined;
      const outputs = await generate(prompts, { keys: active.map((r) => r.envId), turn, onTokens });
      if (!Array.isArray(outputs) || outputs.length !== prompts.length) {
        throw new Error(
          `runRollouts: generate returned ${Array.isArray(outputs) ? outputs.length : typeof outputs} outputs for ${prompts.length} prompts`,
        );
      }
      const badIndex = outputs.findIndex((o) => typeof o !== 'string');
      if (badIndex >= 0)
        throw new Error(`runRollouts: generate output ${badIndex} is ${typeof outputs[badIndex]}, not a string`);
      const stepped = active;
      const inputs = stepped.map((rollout, i) => recordTurn(rollout, turn, prompts[i], outputs[i]));
      active = manager.step(inputs);
      stepped.forEach(recordStep);
      turnsPlayed = turn;
    }
  } finally {
    generate.release?.(); // the policy's per-rollout state (KV caches)
  }

  const states = manager.rolloutStates();
  const trajectories: Trajectory[] = states.map((state) => ({
    ...state,
    turns: turnsByEnv.get(state.envId)!,
    training:
      state.history.length >= 2
        ? buildPrompt(manager.entries[state.envId].info, state.history, { ...promptOptions, mode: 'training' })
        : null,
    turnSamples:
      options.contextWindowMode === 'single_turn'
        ? turnTrainingSamples(manager.entries[state.envId].info, state.history, promptOptions)
        : null,
  }));
  return { trajectories, envMetrics: summarizeEnvMetrics(states), turnsPlayed };
}
