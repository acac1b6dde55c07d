// The policy's tokenizer: a Hugging Face `tokenizer.json` (plus its `tokenizer_config.json`) run by
// @huggingface/tokenizers, and a builder for the tiny presets' byte-level BPE vocabulary.
//
// The tiny vocabulary is built in exactly Qwen2's format (NFC-free, otherwise the same: a regex Split pre-tokenizer
// followed by GPT-2's ByteLevel byte-to-unicode mapping, a BPE model, a ByteLevel decoder), so one loader serves
// Qwen2.5's real tokenizer and ours, and Hugging Face's `AutoTokenizer` loads ours as a Qwen2TokenizerFast.
import { Tokenizer as HFTokenizer } from '@huggingface/tokenizers';

/** The chat template of the Qwen family, reduced to what RAGEN renders: `<|im_start|>{role}\n{content}<|im_end|>\n`
 *  per message, then `<|im_start|>assistant\n` when a generation prompt is asked for. (Qwen2.5's own template also
 *  injects a default system message when there is none; RAGEN always sends one, so the output is the same.) */
export const QWEN_CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** Special tokens of the tiny vocabularies. The `<|...|>` ones are Qwen's chat tokens (marked `special`, so
 *  `skipSpecialTokens` drops them); the format tags are single tokens but ordinary text, as in Qwen's vocabulary. */
export const DEFAULT_SPECIAL_TOKENS: readonly string[] = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<think>',
  '</think>',
  '<answer>',
  '</answer>',
];

/** Qwen2's pre-tokenizer regex (Oniguruma syntax, as in its tokenizer.json): contractions, letter runs with one
 *  leading non-letter, single digits, punctuation runs with trailing newlines, newline runs, spaces. */
const QWEN2_SPLIT_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

type Json = Record<string, unknown>;

interface AddedTokenJSON {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

/** How many texts Tokenizer.encode remembers (least recently used dropped first). */
const ENCODE_CACHE_SIZE = 2048;

export class Tokenizer {
  /** Number of token ids (largest id + 1), added tokens included. A model's `vocab_size` may be larger (padded). */
  readonly vocabSize: number;
  private readonly inner: HFTokenizer;
  /** The ids of recently encoded texts. A step encodes the same texts many times over (every env group's prompt, the
   *  system and user turns of each trajectory's training rendering), and BPE costs far more than a lookup. */
  private readonly recent = new Map<string, number[]>();
  /** `<|im_start|>` where a chat text may be encoded one message at a time (see encode), else null. */
  private readonly messageStart: string | null;
  private readonly json: Json;
  private readonly config: Json;

  private constructor(json: Json, config: Json) {
    this.json = json;
    this.config = config;
    try {
      // clean_up_tokenization_spaces would rewrite " ." to "." on decode and break exact round trips; Qwen's own
      // config turns it off, and the library's default is on, so we pass Qwen's choice unless told otherwise.
      this.inner = new HFTokenizer(json, {
        ...config,
        clean_up_tokenization_spaces: config.clean_up_tokenization_spaces ?? false,
      });
    } catch (err) {
      throw new Error(`invalid tokenizer.json: ${(err as Error).message}`, { cause: err });
    }
    let maxId = -1;
    for (const id of this.inner.get_vocab(true).values()) if (id > maxId) maxId = id;
    this.vocabSize = maxId + 1;
    // The library cuts a text at its added tokens before anything else and encodes the pieces between them on their
    // own, so a text cut where `<|im_start|>` begins encodes to the same ids piece by piece, provided the token takes
    // no whitespace from its neighbours (lstrip, rstrip) and is matched on the raw text (not normalized).
    const mark = (json.added_tokens as AddedTokenJSON[]).find((t) => t.content === '<|im_start|>');
    this.messageStart =
      mark && !mark.lstrip && !mark.rstrip && !mark.normalized && !mark.single_word ? mark.content : null;
  }

  /** Builds a tokenizer from a parsed tokenizer.json and (optionally) tokenizer_config.json. */
  static fromJSON(json: object, config?: object): Tokenizer {
    if (json === null || typeof json !== 'object' || Array.isArray(json)) {
      throw new Error('invalid tokenizer.json: expected a JSON object');
    }
    const j = json as Json;
    const model = j.model as Json | undefined;
    if (!model || typeof model !== 'object' || typeof model.type !== 'string') {
      throw new Error('invalid tokenizer.json: missing "model" (with a "type" such as "BPE")');
    }
    // The library insists on these keys; Hugging Face's writer always emits them, possibly as null.
    const complete: Json = {
      added_tokens: [],
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: null,
      ...j,
    };
    if (!Array.isArray(complete.added_tokens))
      throw new Error('invalid tokenizer.json: "added_tokens" must be an array');
    if (config !== undefined && (config === null || typeof config !== 'object' || Array.isArray(config))) {
      throw new Error('invalid tokenizer_config.json: expected a JSON object');
    }
    return new Tokenizer(complete, (config as Json | undefined) ?? defaultTokenizerConfig(complete));
  }

  /** The tokenizer.json object (a copy), as Hugging Face writes it. `JSON.stringify(tokenizer)` gives the file. */
  toJSON(): object {
    return JSON.parse(JSON.stringify(this.json));
  }

  /** The tokenizer_config.json object (a copy): chat template, eos/pad tokens, tokenizer class. */
  configJSON(): object {
    return JSON.parse(JSON.stringify(this.config));
  }

  /** Token ids of `text`. Special tokens written in the text (e.g. `<|im_end|>`) become their single ids; nothing
   *  is added around the text (no BOS/EOS). Each call returns an array of its own. */
  encode(text: string): number[] {
    if (typeof text !== 'string') throw new Error(`Tokenizer.encode: expected a string, got ${typeof text}`);
    const known = this.recent.get(text);
    if (known) {
      // Most recently used last, so that the oldest entry is the first one a full cache drops.
      this.recent.delete(text);
      this.recent.set(text, known);
      return known.slice();
    }
    const ids = this.encodeMessages(text) ?? this.encodeNew(text);
    if (this.recent.size >= ENCODE_CACHE_SIZE) this.recent.delete(this.recent.keys().next().value as string);
    this.recent.set(text, ids.slice());
    return ids;
  }

  /** A chat text of several messages, one message at a time through encode() (null for a single message): each turn's
   *  prompt repeats the system message, which is then a lookup. The same ids as the whole text (see the constructor). */
  private encodeMessages(text: string): number[] | null {
    const mark = this.messageStart;
    if (mark === null || text.indexOf(mark, 1) < 0) return null;
    const ids: number[] = [];
    for (let from = 0; from < text.length;) {
      const next = text.indexOf(mark, from + 1);
      const end = next < 0 ? text.length : next;
      for (const id of this.encode(text.slice(from, end))) ids.push(id);
      from = end;
    }
    return ids;
  }

  private encodeNew(text: string): number[] {
    const { ids, tokens } = this.inner.encode(text, { add_special_tokens: false });
    const bad = ids.findIndex((id) => id === undefined || id === null);
    if (bad >= 0)
      throw new Error(`Tokenizer.encode: piece '${tokens[bad]}' has no id and the vocabulary has no unk token`);
    return ids;
  }

  /** Text of `ids`. With `skipSpecialTokens`, tokens marked special (Qwen: `<|im_start|>`, `<|im_end|>`, ...) are dropped.
   *  Ids at or past `vocabSize` decode to nothing, as in Hugging Face's tokenizers: a model's embedding can have more
   *  rows than its tokenizer has tokens (Qwen2.5: 151,936 rows, 151,665 tokens), and a sampling policy, an untrained
   *  one above all, does draw those padding ids. Negative or fractional ids are a bug and throw. */
  decode(ids: readonly number[], opts: { skipSpecialTokens?: boolean } = {}): string {
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0)
        throw new Error(`Tokenizer.decode: token id ${id} is not a non-negative integer`);
    }
    const known = ids.filter((id) => id < this.vocabSize);
    if (known.length === 0) return '';
    return this.inner.decode(known, { skip_special_tokens: opts.skipSpecialTokens ?? false });
  }

  /** Id of one vocabulary entry or added token (e.g. '<|im_end|>'), or undefined. */
  tokenId(token: string): number | undefined {
    return this.inner.token_to_id(token);
  }

  /** Vocabulary string of one id (byte-level form, e.g. 'Ġthe'), or undefined. */
  idToToken(id: number): string | undefined {
    return this.inner.id_to_token(id);
  }

  /** End-of-sequence token id (tokenizer_config's eos_token; Qwen chat: `<|im_end|>`). */
  get eosTokenId(): number | undefined {
    return this.configTokenId('eos_token');
  }

  /** Padding token id (tokenizer_config's pad_token; Qwen: `<|endoftext|>`). */
  get padTokenId(): number | undefined {
    return this.configTokenId('pad_token');
  }

  private configTokenId(key: string): number | undefined {
    const v = this.config[key];
    // tokenizer_config stores a token either as a string or as an AddedToken object { content, ... }.
    const content = typeof v === 'string' ? v : v && typeof v === 'object' ? (v as Json).content : undefined;
    return typeof content === 'string' ? this.tokenId(content) : undefined;
  }
}

/**
 * The two token ids a chat policy cannot do without: `<|im_end|>`, where every response stops (RAGEN's chat
 * template), and the pad token of batched generation. Throws naming the missing one; commands call it on a
 * checkpoint's tokenizer before any work, the sampler again when it starts.
 */
export function chatTokenIds(tokenizer: Tokenizer): { imEnd: number; pad: number } {
  const imEnd = tokenizer.tokenId('<|im_end|>');
  const pad = tokenizer.padTokenId;
  if (imEnd === undefined) throw new Error('the tokenizer has no <|im_end|> token (the chat template needs it)');
  if (pad === undefined) throw new Error('the tokenizer has no pad token (tokenizer_config.json pad_token)');
  return { imEnd, pad };
}

/** Options of the tiny byte-level BPE builder. */
export interface TinyTokenizerOptions {
  /** Total number of ids: 256 byte tokens + learned merges + special tokens. Merges stop earlier when no pair
   *  occurs at least twice in the corpus. */
  vocabSize: number;
  /** Added tokens, each encoded as one id (appended after the BPE vocabulary, in this order). */
  specialTokens: readonly string[];
  /** tokenizer_config.json's model_max_length (informational for HF). Default 32768, as Qwen2.5. */
  modelMaxLength?: number;
  /**
   * Characters that are always a token of their own (e.g. the grid symbols of Sokoban and FrozenLake boards). BPE
   * would otherwise merge a board row such as "#___##" into a single token, and a model then has to learn each
   * row-token's contents before it can find what lies above or left of a cell; one token per cell keeps the board
   * a grid (a cell's neighbours sit at fixed token offsets, which rotary position embeddings express directly).
   */
  isolate?: string;
}

/**
 * Trains a byte-level BPE vocabulary on `corpus` (the environments' prompts and responses) and returns it as a
 * Qwen2-format tokenizer. Deterministic: the same corpus and options give the same tokenizer.json, byte for byte.
 */
export function buildTinyTokenizer(corpus: readonly string[], opts: TinyTokenizerOptions): Tokenizer {
  const specials = [...opts.specialTokens];
  if (new Set(specials).size !== specials.length) throw new Error('buildTinyTokenizer: specialTokens has duplicates');
  if (specials.some((s) => typeof s !== 'string' || s.length === 0)) {
    throw new Error('buildTinyTokenizer: specialTokens must be non-empty strings');
  }
  if (!Number.isInteger(opts.vocabSize) || opts.vocabSize < 256 + specials.length) {
    throw new Error(
      `buildTinyTokenizer: vocabSize ${opts.vocabSize} must be an integer >= 256 byte tokens + ` +
        `${specials.length} special tokens = ${256 + specials.length}`,
    );
  }
  if (!Array.isArray(corpus) || corpus.some((s) => typeof s !== 'string')) {
    throw new Error('buildTinyTokenizer: corpus must be an array of strings');
  }

  const byteChars = byteToUnicode();
  const vocab: [string, number][] = byteChars.map((ch, byte) => [ch, byte]);
  const known = new Set(byteChars);

  // Pre-tokenize exactly as encoding will (same pre-tokenizer object), so merges never cross a pre-token boundary.
  const isolate = [...new Set(opts.isolate ?? '')].join('');
  const pretokenizer = new HFTokenizer(qwen2StyleJSON(Object.fromEntries(vocab), [], [], isolate), {}).pre_tokenizer!;
  const wordCounts = new Map<string, number>();
  for (const text of corpus) {
    for (const section of splitOnSpecials(text, specials)) {
      for (const word of pretokenizer.pre_tokenize(section)) wordCounts.set(word, (wordCounts.get(word) ?? 0) + 1);
    }
  }
  const words = [...wordCounts.entries()].map(([w, count]) => ({ symbols: Array.from(w), count }));

  const merges: [string, string][] = [];
  const budget = opts.vocabSize - specials.length;
  while (vocab.length < budget) {
    const best = mostFrequentPair(words);
    if (!best) break;
    const [a, b] = best;
    merges.push([a, b]);
    const merged = a + b;
    if (!known.has(merged)) {
      known.add(merged);
      vocab.push([merged, vocab.length]);
    }
    for (const w of words) w.symbols = applyMerge(w.symbols, a, b);
  }

  const added: AddedTokenJSON[] = specials.map((content, i) => ({
    id: vocab.length + i,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: /^<\|.*\|>$/.test(content),
  }));
  const json = qwen2StyleJSON(
    Object.fromEntries(vocab),
    merges.map(([a, b]) => `${a} ${b}`),
    added,
    isolate,
  );
  return Tokenizer.fromJSON(json, qwen2StyleConfig(added, opts.modelMaxLength ?? 32768));
}

/** A tokenizer_config.json for a tokenizer.json that came without one: Qwen's chat template and tokens if present. */
function defaultTokenizerConfig(json: Json): Json {
  const added = (json.added_tokens as AddedTokenJSON[]) ?? [];
  return qwen2StyleConfig(added, 32768);
}

function qwen2StyleConfig(added: AddedTokenJSON[], modelMaxLength: number): Json {
  const has = (t: string) => added.some((a) => a.content === t);
  const decoder: Json = {};
  for (const a of added) {
    decoder[String(a.id)] = {
      content: a.content,
      lstrip: a.lstrip,
      normalized: a.normalized,
      rstrip: a.rstrip,
      single_word: a.single_word,
      special: a.special,
    };
  }
  return {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: decoder,
    additional_special_tokens: ['<|im_start|>', '<|im_end|>'].filter(has),
    bos_token: null,
    chat_template: QWEN_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: has('<|im_end|>') ? '<|im_end|>' : null,
    errors: 'replace',
    model_max_length: modelMaxLength,
    pad_token: has('<|endoftext|>') ? '<|endoftext|>' : null,
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
}

/** A regular-expression character class matching exactly the given characters. */
function charClass(chars: string): string {
  return `[${[...chars].map((c) => (/[\\\]^-]/.test(c) ? `\\${c}` : c)).join('')}]`;
}

function qwen2StyleJSON(vocab: Record<string, number>, merges: string[], added: AddedTokenJSON[], isolate = ''): Json {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null, // Qwen2.5 applies NFC here; we skip it so that any text round-trips exactly
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        ...(isolate
          ? [{ type: 'Split', pattern: { Regex: charClass(isolate) }, behavior: 'Isolated', invert: false }]
          : []),
        { type: 'Split', pattern: { Regex: QWEN2_SPLIT_REGEX }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }, // as Qwen2.5's
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
}

/**
 * GPT-2's reversible byte -> printable character table: printable Latin-1 bytes map to themselves, the other 68
 * bytes (controls, space, ...) to U+0100 onwards, in byte order. Space becomes 'Ġ', newline 'Ċ'.
 */
export function byteToUnicode(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let next = 0x100;
  for (let b = 0; b < 256; b++) out.push(String.fromCharCode(printable(b) ? b : next++));
  return out;
}

/** Splits text around occurrences of special tokens (longest match first), dropping the tokens themselves. */
function splitOnSpecials(text: string, specials: readonly string[]): string[] {
  if (specials.length === 0) return [text];
  const sorted = [...specials].sort((a, b) => b.length - a.length);
  const pieces: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length;) {
    const hit = sorted.find((s) => text.startsWith(s, i));
    if (hit) {
      if (i > start) pieces.push(text.slice(start, i));
      i += hit.length;
      start = i;
    } else {
      i++;
    }
  }
  if (start < text.length) pieces.push(text.slice(start));
  return pieces;
}

/** The adjacent symbol pair with the highest corpus count (>= 2); ties go to the smaller (a, b) in code-unit order. */
function mostFrequentPair(words: { symbols: string[]; count: number }[]): [string, string] | null {
  const counts = new Map<string, number>();
  for (const { symbols, count } of words) {
    for (let i = 0; i + 1 < symbols.length; i++) {
      // '\u0000' never occurs inside byte-level symbols (byte 0 maps to U+0100), so the key is unambiguous.
      const key = symbols[i] + '\u0000' + symbols[i + 1];
      counts.set(key, (counts.get(key) ?? 0) + count);
    }
  }
  let bestKey: string | null = null;
  let bestCount = 1;
  for (const [key, c] of counts) {
    if (c > bestCount || (c === bestCount && bestKey !== null && comparePairs(key, bestKey) < 0)) {
      bestKey = key;
      bestCount = c;
    }
  }
  if (bestKey === null) return null;
  const [a, b] = bestKey.split('\u0000');
  return [a, b];
}

function comparePairs(x: string, y: string): number {
  const [xa, xb] = x.split('\u0000');
  const [ya, yb] = y.split('\u0000');
  if (xa !== ya) return xa < ya ? -1 : 1;
  return xb === yb ? 0 : xb < yb ? -1 : 1;
}

/** Replaces every non-overlapping adjacent (a, b), left to right, by their concatenation (as BPE encoding does). */
function applyMerge(symbols: string[], a: string, b: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < symbols.length; i++) {
    if (i + 1 < symbols.length && symbols[i] === a && symbols[i + 1] === b) {
      out.push(a + b);
      i++;
    } else {
      out.push(symbols[i]);
    }
  }
  return out;
}
