// The held-out check of the warm-start lab scripts (warmstart-lab, finetune-lab, curriculum-lab): play `episodes`
// validation episodes (seeds from agent.seedVal, RAGEN's 123) at a temperature, as `ragen eval` does, and report the
// success rate with its 95 % Wilson interval next to the format, action and reasoning rates. Also where each
// script's result line goes: stdout and `results.jsonl` beside the checkpoint directory.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { wilsonInterval } from '../../src/eval/stats';
import type { Qwen2Model } from '../../src/model/qwen2';
import type { Tokenizer } from '../../src/model/tokenizer';
import type { RunConfig } from '../../src/starpo/config';
import { checkPolicy } from '../../src/warmstart/warmstart';

export interface HeldOutResult {
  success: number;
  /** 95 % Wilson interval of the success rate, [lo, hi]. */
  ci: number[];
  episodes: number;
  formatRate: number;
  validActionRate: number;
  /** reasoning/grounding, reasoning/grounding_blind, reasoning/answer_agreement. */
  reasoning: Record<string, number>;
}

/** `episodes` held-out episodes of `config`'s validation envs at `temperature` (sampling seed 0). */
export async function heldOutCheck(
  model: Qwen2Model,
  tokenizer: Tokenizer,
  config: RunConfig,
  episodes: number,
  temperature = 0.5,
): Promise<HeldOutResult> {
  const check = await checkPolicy(
    model,
    tokenizer,
    { ...config, agent: { ...config.agent, valGroups: episodes } },
    { temperature, seed: 0, episodes },
  );
  const successes = Math.round(check.success * check.episodes);
  return {
    success: check.success,
    ci: Object.values(wilsonInterval(successes, check.episodes)),
    episodes: check.episodes,
    formatRate: check.formatRate,
    validActionRate: check.validActionRate,
    reasoning: check.reasoning,
  };
}

/** Prints a lab result as one JSON line and appends it to `results.jsonl` in the folder that holds `out`. */
export function recordLabResult(out: string, result: Record<string, unknown>): void {
  console.log(JSON.stringify(result));
  fs.appendFileSync(path.join(path.dirname(out), 'results.jsonl'), JSON.stringify(result) + '\n');
}
