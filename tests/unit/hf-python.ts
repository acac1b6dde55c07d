// The project's Hugging Face Python (.venv-hf, made by scripts/setup.sh: torch 2.13 CPU + transformers) and
// tools/hf/hf_check.py, for tests that check our checkpoints against the real `transformers` and `tokenizers`.
// These tests are not skipped when the venv is missing: they fail and say how to create it.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const REPO = path.resolve(__dirname, '../..');
export const HF_PYTHON = path.join(REPO, '.venv-hf', 'bin', 'python');
const HF_CHECK = path.join(REPO, 'tools', 'hf', 'hf_check.py');

export interface HfRequest {
  model: string;
  texts?: string[];
  ids?: number[][];
  messages?: { role: string; content: string }[];
  critic?: string;
  bf16_of?: string;
  save_bf16?: string;
}

export interface HfReport {
  versions: { torch: string; transformers: string };
  tokenizer_class: string;
  tokenizer_is_fast: boolean;
  token_ids: number[][];
  ragen_special_tokens: { im_start?: number; im_end?: number; error?: string };
  chat?: string;
  model_class: string;
  load_problems: Record<string, string[]>;
  torch_dtype: string;
  weight_dtypes: string[];
  log_probs: number[][];
  critic_class?: string;
  critic_load_problems?: Record<string, string[]>;
  values?: number[][];
  bf16_mismatches?: string[];
  bf16_tensors?: number;
}

/** Runs tools/hf/hf_check.py on one request (offline: nothing is fetched from a hub). */
export function hfCheck(request: HfRequest): HfReport {
  return hfChecks([request])[0];
}

/** Several checks in one Python process, answered in order (a later request may read what an earlier one saved). */
export function hfChecks(requests: readonly HfRequest[]): HfReport[] {
  if (!fs.existsSync(HF_PYTHON)) {
    throw new Error(`${HF_PYTHON} is missing: the Hugging Face interop tests need it; run 'bash scripts/setup.sh'`);
  }
  const out = execFileSync(HF_PYTHON, [HF_CHECK], {
    input: JSON.stringify(requests),
    encoding: 'utf8',
    env: {
      ...process.env,
      HF_HUB_OFFLINE: '1',
      TRANSFORMERS_OFFLINE: '1',
      TRANSFORMERS_VERBOSITY: 'error',
      TOKENIZERS_PARALLELISM: 'false',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(out) as HfReport[];
}

/** The largest absolute difference between two equally long number lists (Infinity when the lengths differ). */
export function maxAbsDiff(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) return Infinity;
  return a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
}
