// Building the dialogue the policy reads (spec §3.2) and marking which of it is trained on (spec §3.4).
//
// Two prompt styles share one structure (system, first user message, then assistant / reward-user turns):
// - 'ragen':   RAGEN v1's exact text, for Qwen-sized models. Byte-for-byte the string RAGEN's context manager
//              renders through the Qwen chat template.
// - 'compact': the same roles and chat markers with short wording, for the tiny presets whose word-level
//              vocabulary has a few hundred entries. No format reminder per turn: the warm start teaches the format.
//
// Two modes:
// - 'generation': the full history up to the current state, then `<|im_start|>assistant\n<think>` so sampling
//                 starts inside the format.
// - 'training':   RAGEN's `prepare_for_update`: the last state-only record and the last turn's reward message are
//                 dropped and no generation prompt is added, so the text ends with the last assistant message.
import { formatCompactReward, formatRagenReward } from './format';
import { CHAT_MARKERS } from './parse';
import type { HistoryRecord, PromptEnvInfo } from './types';

export type PromptStyle = 'ragen' | 'compact';
export type PromptMode = 'generation' | 'training';
export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

/**
 * A piece of the rendered text. Concatenating every segment's `text` gives `RenderedPrompt.text`, and each
 * segment starts with `<|im_start|>`, a special token, so tokenizing segments one by one gives the same ids as
 * tokenizing the whole string.
 */
export interface PromptSegment {
  text: string;
  /** 'generation' is the trailing `<|im_start|>assistant\n<think>` of a generation prompt. */
  role: ChatRole | 'generation';
  /**
   * RAGEN's per-position loss mask BEFORE its one-token shift: a token in a trainable segment is a position whose
   * NEXT token is trained on (see `targetMaskFromPositionMask`). Always false in generation mode.
   */
  trainable: boolean;
  /** For assistant segments: the 1-based turn of the trajectory this response belongs to. */
  turn?: number;
}

export interface RenderedPrompt {
  messages: ChatMessage[];
  text: string;
  segments: PromptSegment[];
}

/**
 * How a prompt numbers the turns it shows. 'window' (RAGEN): from 1 inside the context window, so with a window of
 * one turn every prompt says turn 1. 'episode': each turn's number in the episode, so a windowed policy can tell how
 * many turns it has left (the protocol optimum plays its last turn differently: open loop, every action left).
 */
export type TurnNumbers = 'window' | 'episode';

export interface PromptOptions {
  /** 'ragen' (default) or 'compact'; see the file header. */
  style?: PromptStyle;
  /** 'generation' (default) or 'training'; see the file header. */
  mode?: PromptMode;
  /** RAGEN `enable_think` (default true): false switches the format to `<answer>` only. */
  enableThink?: boolean;
  /** RAGEN `agent_proxy.max_context_window`: render only the last k records (turns renumbered from 1); ≤0 or undefined = all. */
  maxContextWindow?: number;
  /** How the turns shown are numbered (default 'window', RAGEN's); see TurnNumbers. */
  turnNumbers?: TurnNumbers;
  /**
   * RAGEN `enable_response_mask` (default true, RAGEN main): only assistant turns are trainable. false is the
   * April-2025 paper setting: everything after the system prompt (env states, reward messages too).
   */
  responseMaskOnly?: boolean;
  /** RAGEN `action_sep` shown in the instruction (default `||`). */
  actionSep?: string;
}

/** RAGEN v1's system message (trailing space included). */
export const RAGEN_SYSTEM_PROMPT = "You're a helpful assistant. ";

/** One-line task texts of the compact prompt, per env tag. */
export const COMPACT_INSTRUCTIONS: Readonly<Record<string, string>> = {
  SimpleSokoban: 'push every box onto a target.',
  LargerSokoban: 'push every box onto a target.',
  SokobanDifferentGridVocab: 'push every box onto a target.',
  CoordSokoban: 'push every box onto a target. positions are (row, col), counted from 0 at the top left.',
  FrozenLake: 'reach the goal and avoid the holes.',
  CoordFrozenLake: 'reach the goal and avoid the holes. positions are (row, col), counted from 0 at the top left.',
  Bandit: 'pick the arm with the higher average reward.',
  BanditTest: 'pick the arm with the higher average reward.',
};

function formatInstruction(enableThink: boolean): string {
  return enableThink
    ? '<think> [Your thoughts] </think> <answer> [your answer] </answer>'
    : '<answer> [your answer] </answer>';
}

function compactInstructionFor(info: PromptEnvInfo): string {
  const line = info.compactInstruction ?? COMPACT_INSTRUCTIONS[info.tag];
  if (line === undefined) {
    throw new Error(
      `buildPrompt: no compact instruction for env tag '${info.tag}'; set PromptEnvInfo.compactInstruction`,
    );
  }
  return line;
}

/** RAGEN's env prefix: instruction + grid vocabulary + available actions (the start of the first user message). */
export function ragenEnvPrefix(info: PromptEnvInfo, actionSep = '||'): string {
  let prefix = info.instruction;
  if (info.gridVocab && info.gridVocab.length > 0) {
    prefix +=
      '\nThe meaning of each symbol in the state is:\n' + info.gridVocab.map(([s, m]) => `${s}: ${m}`).join(', ');
  }
  if (info.actionNames && info.actionNames.length > 0) {
    prefix += '\nYour available actions are:\n' + info.actionNames.join(', ');
    prefix += `\nYou can make up to ${info.maxActionsPerTraj} actions, separated by the action separator " ${actionSep} "\n`;
  }
  return prefix;
}

/** The header lines of the compact first user message (symbols and actions), possibly empty. */
function compactHeaderLines(info: PromptEnvInfo): string[] {
  const lines: string[] = [];
  if (info.gridVocab && info.gridVocab.length > 0) {
    lines.push('symbols: ' + info.gridVocab.map(([s, m]) => `${s} ${m}`).join(', '));
  }
  if (info.actionNames && info.actionNames.length > 0) lines.push('actions: ' + info.actionNames.join(', '));
  return lines;
}

/**
 * Every fixed word the compact prompt can emit for this env (instruction, headers, keywords, digits, format tags),
 * for building a tiny tokenizer's vocabulary. States and reasoning text are not included.
 */
export function compactPromptFixedText(info: PromptEnvInfo, actionSep = '||'): string {
  return [
    compactInstructionFor(info),
    ...compactHeaderLines(info),
    'turn state: actions left reward',
    '0 1 2 3 4 5 6 7 8 9 . -',
    `<think> </think> <answer> </answer> ${actionSep}`,
  ].join('\n');
}

function checkHistory(history: readonly HistoryRecord[], mode: PromptMode): void {
  if (history.length === 0) throw new Error('buildPrompt: history is empty (reset the env first)');
  if (mode === 'training' && history.length < 2) {
    throw new Error(
      'buildPrompt: training mode needs at least one finished turn, but the history has only the initial state',
    );
  }
  for (const record of history) {
    const response = record.llmResponse;
    if (response !== undefined && (response.includes(CHAT_MARKERS.imStart) || response.includes(CHAT_MARKERS.imEnd))) {
      // A chat marker inside a response would shift RAGEN's turn counting and corrupt the loss mask.
      throw new Error(
        `buildPrompt: an assistant response contains a chat marker (${CHAT_MARKERS.imStart} or ${CHAT_MARKERS.imEnd})`,
      );
    }
  }
}

/** Build the messages, the rendered chat-template text and its trainable segments for one env. */
export function buildPrompt(
  info: PromptEnvInfo,
  history: readonly HistoryRecord[],
  options: PromptOptions = {},
): RenderedPrompt {
  const style = options.style ?? 'ragen';
  const mode = options.mode ?? 'generation';
  const enableThink = options.enableThink ?? true;
  const responseMaskOnly = options.responseMaskOnly ?? true;
  const actionSep = options.actionSep ?? '||';
  const window = options.maxContextWindow ?? -1;
  const turnNumbers = options.turnNumbers ?? 'window';
  if (style !== 'ragen' && style !== 'compact') throw new Error(`buildPrompt: unknown prompt style '${String(style)}'`);
  if (mode !== 'generation' && mode !== 'training') throw new Error(`buildPrompt: unknown mode '${String(mode)}'`);
  if (!Number.isInteger(window)) throw new Error(`buildPrompt: maxContextWindow must be an integer, got ${window}`);
  if (turnNumbers !== 'window' && turnNumbers !== 'episode')
    throw new Error(`buildPrompt: unknown turnNumbers '${String(turnNumbers)}' (window or episode)`);
  checkHistory(history, mode);

  // Training drops the state reached after the last turn: it was never acted on.
  let records = mode === 'training' ? history.slice(0, -1) : history.slice();
  // The turn number of the first record in `records`, to label assistant segments with the real turn.
  let firstTurn = 1;
  if (window > 0 && records.length > window) {
    firstTurn = records.length - window + 1;
    records = records.slice(-window);
  }

  const messages: ChatMessage[] =
    style === 'ragen'
      ? [
          { role: 'system', content: RAGEN_SYSTEM_PROMPT },
          { role: 'user', content: ragenEnvPrefix(info, actionSep) },
        ]
      : [
          { role: 'system', content: compactInstructionFor(info) },
          { role: 'user', content: compactHeaderLines(info).join('\n') },
        ];
  const assistantTurns = new Map<number, number>(); // message index → trajectory turn

  records.forEach((record, idx) => {
    const t = turnNumbers === 'episode' ? firstTurn + idx : idx + 1;
    const last = messages[messages.length - 1];
    if (style === 'ragen') {
      last.content += `\nTurn ${t}:\n`;
      last.content +=
        `State:\n${record.state}\nYou have ${record.actionsLeft} actions left. Always output: ${formatInstruction(enableThink)}` +
        ` with no extra text. Strictly follow this format. Max response length: ${info.maxTokens} words (tokens).\n`;
    } else {
      const lines = [`turn ${t}`, 'state:', record.state, `actions left ${record.actionsLeft}`];
      last.content += (last.content.length > 0 ? '\n' : '') + lines.join('\n');
    }
    if (record.llmResponse !== undefined) {
      assistantTurns.set(messages.length, firstTurn + idx);
      messages.push({ role: 'assistant', content: record.llmResponse });
    }
    const isLastRecord = idx === records.length - 1;
    if (record.reward !== undefined && !(mode === 'training' && isLastRecord)) {
      const executed = record.actions?.length ?? 0;
      messages.push(
        style === 'ragen'
          ? { role: 'user', content: `Reward:\n${formatRagenReward(record.reward, executed)}\n` }
          : { role: 'user', content: `reward ${formatCompactReward(record.reward)}` },
      );
    }
  });

  const segments: PromptSegment[] = messages.map((message, i) => {
    const segment: PromptSegment = {
      text: `${CHAT_MARKERS.imStart}${message.role}\n${message.content}${CHAT_MARKERS.imEnd}\n`,
      role: message.role,
      trainable: mode === 'training' && (responseMaskOnly ? message.role === 'assistant' : message.role !== 'system'),
    };
    const turn = assistantTurns.get(i);
    if (turn !== undefined) segment.turn = turn;
    return segment;
  });
  if (mode === 'generation') {
    segments.push({
      text: `${CHAT_MARKERS.imStart}assistant\n${enableThink ? '<think>' : '<answer>'}`,
      role: 'generation',
      trainable: false,
    });
  }
  return { messages, text: segments.map((s) => s.text).join(''), segments };
}

/**
 * RAGEN-2's `single_turn` context mode: every played turn of a history as its own training sample, its prompt
 * rendered as the policy saw it when it answered (the last `maxContextWindow` turns, or all turns so far), and only
 * that turn's response trainable, so each response is trained on once. `history` is a finished trajectory's (its
 * last record is the state after the last turn, as in training mode).
 */
export function turnTrainingSamples(
  info: PromptEnvInfo,
  history: readonly HistoryRecord[],
  options: PromptOptions = {},
): RenderedPrompt[] {
  const samples: RenderedPrompt[] = [];
  for (let turn = 1; turn < history.length; turn++) {
    // history[0 .. turn] = turns 1 .. turn and the state after the turn, which training mode drops.
    const sample = buildPrompt(info, history.slice(0, turn + 1), { ...options, mode: 'training' });
    const segments = sample.segments.map((seg) =>
      seg.turn !== undefined && seg.turn !== turn ? { ...seg, trainable: false } : seg,
    );
    samples.push({ ...sample, segments });
  }
  return samples;
}

/**
 * Turn a per-token position mask (from trainable segments) into a mask over prediction targets: entry i says
 * whether token ids[i + 1] is trained on, matching `Policy.tokenLogProbs(ids)` which scores ids[1..]. This is
 * RAGEN's `loss_mask[:, :-1]` aligned with `responses = input_ids[:, 1:]`.
 */
export function targetMaskFromPositionMask(positionMask: readonly boolean[]): boolean[] {
  return positionMask.slice(0, -1);
}
