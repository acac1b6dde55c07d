// Turning a model's sampled text into actions, the way RAGEN's context manager does (spec §3.3).
//
// Generation is forced to start inside the format: the prompt ends with `<think>` (or `<answer>` in no-think
// mode), so the sampled continuation lacks that tag. `restoreForcedPrefix` puts it back before parsing, exactly as
// RAGEN prepends it to the decoded text.
//
// What gets trained on is NOT the sampled text but `reconstructed`: the think and answer parts re-wrapped in their
// tags, so text after `</answer>` (and anything before `<think>`) never reaches the loss (spec §10.4).

/** The chat-template markers of the Qwen template; decoding with skip_special_tokens removes them. */
export const CHAT_MARKERS = {
  imStart: '<|im_start|>',
  imEnd: '<|im_end|>',
  endOfText: '<|endoftext|>',
} as const;

/** Tokens RAGEN deletes from inside the think and answer parts, in the order it deletes them. */
const STRIPPED_TOKENS = ['<think>', '</think>', '<answer>', '</answer>', CHAT_MARKERS.imStart, CHAT_MARKERS.imEnd];

export interface ParseOptions {
  /** RAGEN `agent_proxy.enable_think` (default true): expect `<think>…</think><answer>…</answer>`; false expects only `<answer>…</answer>`. */
  enableThink?: boolean;
  /** RAGEN `agent_proxy.max_actions_per_turn` (default 5; v2 uses 2): actions beyond this are discarded. */
  maxActionsPerTurn?: number;
  /** RAGEN `agent_proxy.action_sep` (default `||`): separates primitive actions inside the answer. */
  actionSep?: string;
  /**
   * How the answer is written into `reconstructed`.
   * - 'ifTruncated' (default, RAGEN v1 code): the stripped answer text is kept as written, and only rebuilt as
   *   `a1 || a2 || …` when actions had to be cut to `maxActionsPerTurn`.
   * - 'always': the answer is always rebuilt from the kept actions (normalises spacing around separators).
   */
  rejoinActions?: 'ifTruncated' | 'always';
}

export interface ParsedResponse {
  /** Reasoning between `<think>` and `</think>`, special tokens removed, trimmed ('' in no-think mode or on failure). */
  think: string;
  /** The answer text as it is stored in `reconstructed` ('' when the format did not match). */
  answer: string;
  /** Primitive action strings, trimmed, empties dropped, at most `maxActionsPerTurn`. Names are not validated here. */
  actions: string[];
  /** True when the think/answer pattern was found. A formatOk response can still carry zero or unknown actions. */
  formatOk: boolean;
  /** What RAGEN stores as `llm_response` and trains on: the rebuilt tags, or the raw text when the format failed. */
  reconstructed: string;
}

const THINK_PATTERN = /<think>(.*?)<\/think>\s*<answer>(.*?)<\/answer>/s;
const ANSWER_PATTERN = /<answer>(.*?)<\/answer>/s;

/**
 * Put back the tag that the prompt forced (`<think>` or `<answer>`) and drop chat markers, mimicking RAGEN's
 * `"<think>" + tokenizer.decode(ids, skip_special_tokens=True)`.
 */
export function restoreForcedPrefix(generated: string, enableThink = true): string {
  let text = generated;
  for (const marker of Object.values(CHAT_MARKERS)) text = text.split(marker).join('');
  return (enableThink ? '<think>' : '<answer>') + text;
}

function stripSpecialTokens(text: string): string {
  // RAGEN trims after each deletion; trimming is idempotent and deletions never create whitespace at the ends
  // that a later deletion would need, but we keep its order anyway so odd inputs behave identically.
  let out = text;
  for (const token of STRIPPED_TOKENS) out = out.split(token).join('').trim();
  return out;
}

/** Parse one response (with the forced tag already restored; see `restoreForcedPrefix`). */
export function parseResponse(text: string, options: ParseOptions = {}): ParsedResponse {
  const enableThink = options.enableThink ?? true;
  const maxActionsPerTurn = options.maxActionsPerTurn ?? 5;
  const actionSep = options.actionSep ?? '||';
  const rejoin = options.rejoinActions ?? 'ifTruncated';
  if (!Number.isInteger(maxActionsPerTurn) || maxActionsPerTurn < 1) {
    throw new Error(`parseResponse: maxActionsPerTurn must be a positive integer, got ${maxActionsPerTurn}`);
  }
  if (actionSep.length === 0) throw new Error('parseResponse: actionSep must not be empty');

  const match = (enableThink ? THINK_PATTERN : ANSWER_PATTERN).exec(text);
  if (!match) {
    // RAGEN keeps the raw text as the response (it is trained on, and penalised by the env manager).
    return { think: '', answer: '', actions: [], formatOk: false, reconstructed: text };
  }
  const think = enableThink ? stripSpecialTokens(match[1]) : '';
  let answer = stripSpecialTokens(enableThink ? match[2] : match[1]);
  let actions = answer
    .split(actionSep)
    .map((a) => a.trim())
    .filter((a) => a.length > 0);
  const truncated = actions.length > maxActionsPerTurn;
  if (truncated) actions = actions.slice(0, maxActionsPerTurn);
  if (truncated || rejoin === 'always') answer = actions.join(` ${actionSep} `);

  const reconstructed = enableThink ? `<think>${think}</think><answer>${answer}</answer>` : `<answer>${answer}</answer>`;
  return { think, answer, actions, formatOk: true, reconstructed };
}
