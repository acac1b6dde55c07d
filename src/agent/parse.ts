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

/** One character of JavaScript's `\s` class (the regex's whitespace, Unicode spaces included). */
const WHITESPACE = /^\s$/;

/**
 * The first `<think>A</think>` + whitespace + `<answer>B</answer>` in `text`, as the lazy regular expression
 * /<think>(.*?)<\/think>\s*<answer>(.*?)<\/answer>/s (RAGEN's pattern) would find it, or null. Written as a forward
 * scan because that regular expression backtracks super-linearly on adversarial text (a 46 kB response took 7.6 s):
 * this is linear in the text's length. Why the scan finds the regex's match:
 * - the leftmost match starts at the first `<think>`: any later start sees a subset of the same closing tags;
 * - from there the regex tries each `</think>` in order and takes the first one followed by whitespace and
 *   `<answer>` ('<' is not whitespace, so backtracking into `\s*` never helps);
 * - that candidate matches iff a `</answer>` follows its `<answer>`; if none does, no later candidate can match.
 */
function matchThinkAnswer(text: string): [think: string, answer: string] | null {
  const open = text.indexOf('<think>');
  if (open < 0) return null;
  const thinkStart = open + '<think>'.length;
  for (let close = text.indexOf('</think>', thinkStart); close >= 0; close = text.indexOf('</think>', close + 1)) {
    let at = close + '</think>'.length;
    while (at < text.length && WHITESPACE.test(text[at])) at++;
    if (!text.startsWith('<answer>', at)) continue;
    const answer = matchAnswer(text, at);
    return answer === null ? null : [text.slice(thinkStart, close), answer];
  }
  return null;
}

/** The first `<answer>B</answer>` at or after `from`, as /<answer>(.*?)<\/answer>/s finds it (B), or null. Linear. */
function matchAnswer(text: string, from = 0): string | null {
  const open = text.indexOf('<answer>', from);
  if (open < 0) return null;
  const start = open + '<answer>'.length;
  const close = text.indexOf('</answer>', start);
  return close < 0 ? null : text.slice(start, close);
}

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

  const answerOnly = enableThink ? null : matchAnswer(text);
  const match = enableThink
    ? matchThinkAnswer(text)
    : answerOnly === null
      ? null
      : (['', answerOnly] as [string, string]);
  if (!match) {
    // RAGEN keeps the raw text as the response (it is trained on, and penalised by the env manager).
    return { think: '', answer: '', actions: [], formatOk: false, reconstructed: text };
  }
  const think = enableThink ? stripSpecialTokens(match[0]) : '';
  let answer = stripSpecialTokens(match[1]);
  let actions = answer
    .split(actionSep)
    .map((a) => a.trim())
    .filter((a) => a.length > 0);
  const truncated = actions.length > maxActionsPerTurn;
  if (truncated) actions = actions.slice(0, maxActionsPerTurn);
  if (truncated || rejoin === 'always') answer = actions.join(` ${actionSep} `);

  const reconstructed = enableThink
    ? `<think>${think}</think><answer>${answer}</answer>`
    : `<answer>${answer}</answer>`;
  return { think, answer, actions, formatOk: true, reconstructed };
}
