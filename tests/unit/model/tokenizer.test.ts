import { readFileSync } from 'node:fs';
import { Tokenizer as HFTokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SPECIAL_TOKENS,
  QWEN_CHAT_TEMPLATE,
  Tokenizer,
  buildTinyTokenizer,
  byteToUnicode,
} from '../../../src/model/tokenizer';

// A corpus in the style of the environments' prompts and responses.
const CORPUS = [
  "You're a helpful assistant. ",
  'You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets.',
  'The meaning of each symbol in the state is:\n#: wall, _: empty, O: target, √: box on target, X: box, P: player',
  'Your available actions are:\nUp, Down, Left, Right',
  '<|im_start|>assistant\n<think>The box is left of the target, so I push it right.</think><answer>Right || Up</answer><|im_end|>',
  'State:\n######\n#_P__#\n#_X_O#\n######\nYou have 3 actions left.',
  'Turn 1:\nState:\n_P_O\nReward:\n0.0\n',
  'You are walking on a frozen lake. Reach the goal G without falling into a hole O.',
];
const corpus = Array.from({ length: 20 }, (_, i) => CORPUS.map((s) => s.replace('3', String(i % 10)))).flat();

const tiny = () => buildTinyTokenizer(corpus, { vocabSize: 400, specialTokens: DEFAULT_SPECIAL_TOKENS });

describe('byte-level table', () => {
  it('matches GPT-2 facts: printable bytes map to themselves, space is Ġ, newline Ċ, soft hyphen Ń', () => {
    const t = byteToUnicode();
    expect(t.length).toBe(256);
    expect(new Set(t).size).toBe(256);
    expect(t[0x41]).toBe('A');
    expect(t[0x20]).toBe('Ġ');
    expect(t[0x0a]).toBe('Ċ');
    expect(t[0x00]).toBe('Ā');
    expect(t[0xad]).toBe('Ń');
    expect(t[0xe2]).toBe('â');
  });
});

describe('tiny byte-level BPE', () => {
  it('round-trips any text exactly, unicode and whitespace included', () => {
    const tok = tiny();
    const texts = [
      '',
      ' ',
      '\n',
      '\n\n  \t',
      'Up || Down',
      '#_√X\nP__O',
      '  leading and trailing  ',
      'naïve café',
      'e\u0301 (decomposed)',
      '日本語のテキスト',
      'emoji 🧊🕳️ and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
      'nul\u0000 and \u007f and \r\n line',
      "it's we'll they'RE",
      '1234567890 3.14 -2',
      'a<think>b</think>c<answer>Left</answer>',
      '<|im_start|>user\nhi<|im_end|>\n',
      'replacement \ufffd character',
    ];
    for (const text of texts) {
      const ids = tok.encode(text);
      expect(tok.decode(ids), JSON.stringify(text)).toBe(text);
      for (const id of ids) expect(id).toBeLessThan(tok.vocabSize);
    }
  });

  it('gives a text seen before the same ids in an array of its own, also after many other texts', () => {
    const tok = tiny();
    const fresh = tiny();
    const first = tok.encode(CORPUS[1]);
    first.fill(0); // a caller's edit must not reach the next caller
    expect(tok.encode(CORPUS[1])).toEqual(fresh.encode(CORPUS[1]));
    // More distinct texts than it remembers, then the early ones again: each still its own ids.
    const many = Array.from({ length: 2500 }, (_, i) => `${CORPUS[i % CORPUS.length]} ${i}`);
    for (const text of many) tok.encode(text);
    for (const i of [0, 1, 7, 1300, 2499]) expect(tok.encode(many[i])).toEqual(fresh.encode(many[i]));
  });

  it('encodes a chat text one message at a time: the ids of the whole text, the repeated system message looked up', () => {
    const files = [
      tiny().toJSON(),
      JSON.parse(readFileSync('public/warmstart/frozenlake-tiny/tokenizer.json', 'utf8')) as object,
    ];
    const system = '<|im_start|>system\nYou are walking on a frozen lake. Reach the goal G.<|im_end|>\n';
    const texts = [0, 1, 2].map(
      (i) =>
        `${system}<|im_start|>user\nTurn ${i}:\nState:\n_P_O\nÉté ✓ 😀 x<|im_end|>\n<|im_start|>assistant\n<think>`,
    );
    texts.push(`lead-in ${texts[0]}`, `${system}${system}<|im_start|>`, '<|im_start|><|im_start|>user\n\n');
    for (const json of files) {
      const tok = Tokenizer.fromJSON(json);
      const direct = new HFTokenizer(JSON.parse(JSON.stringify(json)) as Record<string, unknown>, {});
      const inner = (tok as unknown as { inner: { encode: (t: string) => unknown } }).inner;
      const seen: string[] = [];
      const encode = inner.encode.bind(inner);
      inner.encode = (t: string, ...rest: unknown[]) => (
        seen.push(t),
        (encode as (...a: unknown[]) => unknown)(t, ...rest)
      );
      for (const text of texts)
        expect(tok.encode(text), JSON.stringify(text)).toEqual(direct.encode(text, { add_special_tokens: false }).ids);
      expect(seen.filter((t) => t === system)).toHaveLength(1); // encoded once, then looked up
      expect(seen).not.toContain(texts[0]);
    }
  });

  it('encodes every special token as its single id, also glued to other text', () => {
    const tok = tiny();
    const ids = DEFAULT_SPECIAL_TOKENS.map((s) => tok.tokenId(s));
    expect(ids.every((id) => id !== undefined)).toBe(true);
    expect(new Set(ids).size).toBe(DEFAULT_SPECIAL_TOKENS.length);
    for (const s of DEFAULT_SPECIAL_TOKENS) expect(tok.encode(s)).toEqual([tok.tokenId(s)]);
    const glued = tok.encode('x<answer>Up</answer>');
    expect(glued).toContain(tok.tokenId('<answer>'));
    expect(glued).toContain(tok.tokenId('</answer>'));
    expect(glued[glued.length - 1]).toBe(tok.tokenId('</answer>'));
  });

  it('respects the vocabulary size bound and learns merges that compress the corpus', () => {
    const tok = tiny();
    expect(tok.vocabSize).toBe(400);
    const json = tok.toJSON() as {
      model: { vocab: Record<string, number>; merges: string[] };
      added_tokens: { id: number }[];
    };
    expect(Object.keys(json.model.vocab).length + json.added_tokens.length).toBe(400);
    expect(json.added_tokens.map((a) => a.id)).toEqual(
      DEFAULT_SPECIAL_TOKENS.map((_, i) => 400 - DEFAULT_SPECIAL_TOKENS.length + i),
    );
    const text = 'You are solving the Sokoban puzzle.';
    expect(tok.encode(text).length).toBeLessThan(new TextEncoder().encode(text).length / 2);
    const smaller = buildTinyTokenizer(corpus, { vocabSize: 300, specialTokens: DEFAULT_SPECIAL_TOKENS });
    expect(smaller.vocabSize).toBe(300);
    expect(smaller.encode(text).length).toBeGreaterThan(tok.encode(text).length);
  });

  it('learns the hand-computed merges on a tiny corpus (most frequent pair first, ties in code-unit order)', () => {
    // Pre-tokens: 'ab', 'Ġab' x3 -> pairs (a,b) x4, (Ġ,a) x3 -> merge 'a b'; then (Ġ,ab) x3 -> merge 'Ġ ab'.
    const a = buildTinyTokenizer(['ab ab ab ab'], { vocabSize: 300, specialTokens: [] });
    expect((a.toJSON() as { model: { merges: string[] } }).model.merges).toEqual(['a b', 'Ġ ab']);
    expect(a.vocabSize).toBe(258);
    expect(a.encode('ab ab')).toEqual([256, 257]);
    expect(a.encode('a b')).toEqual(['a', 'Ġ', 'b'].map((c) => (c.charCodeAt(0) === 0x120 ? 32 : c.charCodeAt(0))));
    // Equal counts: (u,v) and (x,y) both occur twice; 'u' < 'x' so 'u v' comes first. Pairs seen once are never merged.
    const b = buildTinyTokenizer(['xy', 'uv', 'xy', 'uv', 'pqr'], { vocabSize: 300, specialTokens: [] });
    expect((b.toJSON() as { model: { merges: string[] } }).model.merges).toEqual(['u v', 'x y']);
  });

  it('never merges across a special token', () => {
    const tok = buildTinyTokenizer(Array(10).fill('a<think>b a<think>b'), {
      vocabSize: 300,
      specialTokens: ['<think>'],
    });
    const merges = (tok.toJSON() as { model: { merges: string[] } }).model.merges;
    expect(merges.some((m) => m.includes('<') || m.includes('>'))).toBe(false);
  });

  it('is deterministic: the same corpus gives the same tokenizer.json bytes', () => {
    expect(JSON.stringify(tiny())).toBe(JSON.stringify(tiny()));
    expect(JSON.stringify(tiny().configJSON())).toBe(JSON.stringify(tiny().configJSON()));
  });

  it('reloads from its own tokenizer.json and tokenizer_config.json with identical behaviour', () => {
    const tok = tiny();
    const again = Tokenizer.fromJSON(JSON.parse(JSON.stringify(tok)), JSON.parse(JSON.stringify(tok.configJSON())));
    for (const text of CORPUS) expect(again.encode(text)).toEqual(tok.encode(text));
    expect(again.vocabSize).toBe(tok.vocabSize);
  });

  it('writes a Qwen2-style tokenizer_config.json (chat template, eos/pad tokens) HF AutoTokenizer can use', () => {
    const tok = tiny();
    const cfg = tok.configJSON() as Record<string, unknown>;
    expect(cfg.chat_template).toBe(QWEN_CHAT_TEMPLATE);
    expect(cfg.eos_token).toBe('<|im_end|>');
    expect(cfg.pad_token).toBe('<|endoftext|>');
    expect(cfg.tokenizer_class).toBe('Qwen2Tokenizer');
    expect(tok.eosTokenId).toBe(tok.tokenId('<|im_end|>'));
    expect(tok.padTokenId).toBe(tok.tokenId('<|endoftext|>'));
    const decoder = cfg.added_tokens_decoder as Record<string, { content: string; special: boolean }>;
    expect(decoder[String(tok.tokenId('<|im_end|>'))]).toMatchObject({ content: '<|im_end|>', special: true });
    expect(decoder[String(tok.tokenId('<think>'))]).toMatchObject({ content: '<think>', special: false });
  });

  it('skipSpecialTokens drops the chat tokens and keeps the format tags', () => {
    const tok = tiny();
    const ids = tok.encode('<|im_start|>assistant\n<think>hm</think><answer>Up</answer><|im_end|>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('assistant\n<think>hm</think><answer>Up</answer>');
  });

  it("decodes ids past the vocabulary (an embedding's padding rows) to nothing, as Hugging Face does", () => {
    const tok = tiny();
    const ids = tok.encode('<think>hm</think>');
    expect(tok.decode([tok.vocabSize + 7, ...ids, tok.vocabSize])).toBe('<think>hm</think>');
    expect(tok.decode([tok.vocabSize])).toBe('');
  });

  it('rejects bad options and bad ids with clear errors', () => {
    expect(() => buildTinyTokenizer(corpus, { vocabSize: 200, specialTokens: [] })).toThrow(/vocabSize 200 must be/);
    expect(() => buildTinyTokenizer(corpus, { vocabSize: 300, specialTokens: ['<a>', '<a>'] })).toThrow(/duplicates/);
    const tok = tiny();
    expect(() => tok.decode([-1])).toThrow(/token id -1 is not a non-negative integer/);
    expect(() => tok.decode([1.5])).toThrow(/token id 1.5 is not a non-negative integer/);
    expect(() => Tokenizer.fromJSON({})).toThrow(/missing "model"/);
    expect(() => Tokenizer.fromJSON([] as unknown as object)).toThrow(/expected a JSON object/);
  });
});

describe('a Qwen2.5-style tokenizer.json (hand-built) loads through the same path', () => {
  // GPT-2's byte table, computed here the classic way (printable ranges first, the rest appended from 256 on).
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let extra = 0;
  for (let b = 0; b < 256; b++)
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + extra++);
    }
  const byteChar: Record<number, string> = {};
  bs.forEach((b, i) => {
    byteChar[b] = String.fromCharCode(cs[i]);
  });

  // Vocab ordered as GPT-2/Qwen order it (by the table above), then merges; added tokens with a gap, as Qwen pads.
  const vocab: Record<string, number> = {};
  bs.forEach((b, i) => {
    vocab[byteChar[b]] = i;
  });
  const merges = ['Ġ t', 'h e', 'Ġt he', 'c a', 'ca t', 'Ġ ca', 'Ġca t', 'u s', 'us e', 'r us', 'Ċ Ċ'];
  let next = 256;
  for (const m of merges) {
    const t = m.replace(' ', '');
    if (!(t in vocab)) vocab[t] = next++;
  }
  const qwenLike = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      {
        id: 300,
        content: '<|endoftext|>',
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      },
      {
        id: 301,
        content: '<|im_start|>',
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      },
      {
        id: 302,
        content: '<|im_end|>',
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      },
    ],
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        {
          type: 'Split',
          pattern: {
            Regex:
              "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
          },
          behavior: 'Isolated',
          invert: false,
        },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const qwenConfig = {
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    clean_up_tokenization_spaces: false,
    chat_template: QWEN_CHAT_TEMPLATE,
  };

  it('encodes with its merges, special tokens and regex, and round-trips', () => {
    const tok = Tokenizer.fromJSON(qwenLike, qwenConfig);
    expect(tok.vocabSize).toBe(303);
    const text = '<|im_start|>user\nthe cat, the ruse<|im_end|>\n\n';
    const ids = tok.encode(text);
    // Pre-tokens: 'user', '\n'->'Ċ', 'the', ' cat', ',', ' the', ' ruse', '\n\n'.
    // 'user' = u s e r -> (u s) -> us, (us e) -> use; 'r' stays: use, r
    // ' cat' = Ġ c a t -> (c a) rank 3 -> ca; then (ca t) rank 4 beats (Ġ ca) rank 5 -> Ġ, cat ('Ġcat' is unreachable)
    // ' ruse' = Ġ r u s e -> us -> use; (r us) never applies since 'us' became 'use' first (rank 8 vs 9)
    const v = (t: string) => vocab[t];
    expect(ids).toEqual([
      301,
      v('use'),
      v('r'),
      v('Ċ'),
      v('t'),
      v('he'),
      v('Ġ'),
      v('cat'),
      v(','),
      v('Ġthe'),
      v('Ġ'),
      v('r'),
      v('use'),
      302,
      v('ĊĊ'),
    ]);
    expect(tok.decode(ids)).toBe(text);
    expect(tok.eosTokenId).toBe(302);
    expect(tok.padTokenId).toBe(300);
    expect(tok.tokenId('Ġthe')).toBe(v('Ġthe'));
    expect(tok.idToToken(v('Ġcat'))).toBe('Ġcat');
  });

  it('applies its NFC normalizer (so decomposed accents come back composed)', () => {
    const tok = Tokenizer.fromJSON(qwenLike, qwenConfig);
    expect(tok.decode(tok.encode('cafe\u0301'))).toBe('caf\u00e9');
  });

  it('without a tokenizer_config.json, gets Qwen defaults for eos/pad and the chat template', () => {
    const tok = Tokenizer.fromJSON(qwenLike);
    expect(tok.eosTokenId).toBe(302);
    expect(tok.padTokenId).toBe(300);
    expect((tok.configJSON() as { chat_template: string }).chat_template).toBe(QWEN_CHAT_TEMPLATE);
  });
});
