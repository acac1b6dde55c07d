// Where a browser run's initial policy comes from: the preset's warm-start checkpoint, fetched from the static site
// (public/<model.warmStart>/ is served next to index.html), exactly the files `ragen warmstart` writes. When the site
// ships no warm start for the preset, the run starts from a freshly initialised tiny model instead and says so: such
// a policy cannot write the <think>/<answer> format yet (docs/architecture.md "The policy and its warm start"), but
// it trains for real.
import { CHECKPOINT_FILES } from '../src/model/checkpoint';
import { Qwen2Model, initQwen2Weights } from '../src/model/qwen2';
import type { Tokenizer } from '../src/model/tokenizer';
import type { RunConfig } from '../src/starpo/config';
import {
  WARMSTART_PRESETS,
  WARMSTART_RECIPES,
  buildWarmStartTokenizer,
  demonstrationsForRun,
  tinyQwen2Config,
  warmStartTags,
  type WarmStartPreset,
} from '../src/warmstart/warmstart';

/** Files a checkpoint cannot do without; the others (tokenizer_config.json, generation_config.json) are optional. */
const REQUIRED = new Set(['config.json', 'model.safetensors', 'tokenizer.json']);

/**
 * Fetches a checkpoint directory (relative to `siteBase`). Returns null when the site has no such checkpoint (its
 * config.json is missing); throws when it exists but another required file cannot be read.
 */
export async function fetchCheckpoint(siteBase: string, dir: string): Promise<Record<string, Uint8Array> | null> {
  const base = new URL(dir.endsWith('/') ? dir : `${dir}/`, siteBase);
  const files: Record<string, Uint8Array> = {};
  for (const name of CHECKPOINT_FILES) {
    const url = new URL(name, base);
    const response = await fetch(url);
    // A static server answers a missing file with 404, a dev server may answer index.html: neither is a checkpoint.
    const isHtml = (response.headers.get('content-type') ?? '').includes('text/html');
    if (!response.ok || isHtml) {
      if (name === 'config.json') return null;
      if (REQUIRED.has(name))
        throw new Error(`warm-start checkpoint ${base.pathname}: could not fetch ${name} (HTTP ${response.status})`);
      continue;
    }
    files[name] = new Uint8Array(await response.arrayBuffer());
  }
  return files;
}

/** Demonstration episodes used only to build the vocabulary of a fresh model (the full recipe's count is not needed). */
const VOCAB_EPISODES = 96;

/**
 * A freshly initialised tiny model for `config` (shape `model.tiny`, weights seeded by trainer.seed) with the
 * warm-start recipe's tokenizer, so its vocabulary covers the preset's prompts.
 */
export function freshTinyPolicy(config: RunConfig): { model: Qwen2Model; tokenizer: Tokenizer } {
  const name = config.model.warmStart?.split('/').pop();
  const recipeName: WarmStartPreset =
    name && (WARMSTART_PRESETS as string[]).includes(name) ? (name as WarmStartPreset) : 'bandit-tiny';
  const recipe = { ...WARMSTART_RECIPES[recipeName], episodes: VOCAB_EPISODES };
  const tokenizer = buildWarmStartTokenizer(
    demonstrationsForRun(config, recipe),
    warmStartTags(config),
    recipe.vocabSize,
  );
  const modelConfig = tinyQwen2Config(config.model.tiny, tokenizer.vocabSize);
  return { model: new Qwen2Model(modelConfig, initQwen2Weights(modelConfig, config.trainer.seed)), tokenizer };
}
