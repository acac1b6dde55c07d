// Node side of `ragen eval`: from a directory on disk to a scorable policy and the run config it was trained with.
//
// A checkpoint directory can be:
//   a run directory from `ragen train` (config.json + checkpoints/)  -> its newest checkpoint, its config;
//   a checkpoint of such a run (RUN/checkpoints/step-N/)             -> the config two levels up (RUN/config.json);
//   a warm-start directory (public/warmstart/<preset>/warmstart.json) -> the config of that preset;
//   any other Hugging Face Qwen2 directory                            -> needs --preset NAME.
// An explicit preset always wins over what the directory implies.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readCheckpointDirFiles } from '../model/checkpointDir';
import { loadPolicyFiles } from '../model/modelFiles';
import type { Qwen2Model } from '../model/qwen2';
import type { Tokenizer } from '../model/tokenizer';
import { parseRunConfig, type RunConfig } from '../starpo/config';
import { resolvePreset } from '../starpo/presets';
import { CONFIG_FILE, CHECKPOINTS_DIR, latestCheckpoint } from '../node/runDir';
// The config-to-scorecard part is browser-safe and lives in ./fromConfig (the playground worker uses it too).
export { agentFormatFromConfig, protocolFromConfig, suitesFromConfig } from './fromConfig';

export interface ResolvedCheckpoint {
  /** The Hugging Face model directory that is loaded. */
  modelDir: string;
  config: RunConfig;
  /** Where the config came from, for the report ("run config RUN/config.json", "preset bandit-tiny", ...). */
  configSource: string;
}

/** A config of a preset (its first arm: every arm of a preset plays the same envs). */
function presetRunConfig(name: string): RunConfig {
  return resolvePreset(name).arms[0].config;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

/** Finds the model files and the run config of `dir` (see the top of this file); the Error names what is missing. */
export function resolveCheckpoint(dir: string, preset?: string): ResolvedCheckpoint {
  const abs = path.resolve(dir);
  if (!fs.existsSync(abs) || !fs.statSync(abs).isDirectory())
    throw new Error(`checkpoint directory ${dir} does not exist`);
  let modelDir = abs;
  let runDir: string | null = null;
  if (!fs.existsSync(path.join(abs, 'model.safetensors')) && fs.existsSync(path.join(abs, CHECKPOINTS_DIR))) {
    const latest = latestCheckpoint(abs);
    if (!latest) throw new Error(`run directory ${dir} holds no complete checkpoint under ${CHECKPOINTS_DIR}/`);
    modelDir = latest.dir;
    runDir = abs;
  }
  if (
    !fs.existsSync(path.join(modelDir, 'model.safetensors')) &&
    !fs.existsSync(path.join(modelDir, 'model.safetensors.index.json'))
  ) {
    throw new Error(`checkpoint directory ${dir} holds no model (no model.safetensors)`);
  }
  if (preset !== undefined) return { modelDir, config: presetRunConfig(preset), configSource: `preset ${preset}` };
  const runConfigFile = path.join(runDir ?? path.dirname(path.dirname(modelDir)), CONFIG_FILE);
  if (path.basename(path.dirname(modelDir)) === CHECKPOINTS_DIR && fs.existsSync(runConfigFile)) {
    return {
      modelDir,
      config: parseRunConfig(readJson(runConfigFile), runConfigFile),
      configSource: `run config ${runConfigFile}`,
    };
  }
  const warmstartFile = path.join(modelDir, 'warmstart.json');
  if (fs.existsSync(warmstartFile)) {
    const name = (readJson(warmstartFile) as { preset?: unknown }).preset;
    if (typeof name !== 'string') throw new Error(`${warmstartFile} names no preset`);
    return { modelDir, config: presetRunConfig(name), configSource: `preset ${name} (from warmstart.json)` };
  }
  throw new Error(
    `cannot tell which run ${dir} belongs to (no ../../config.json, no warmstart.json): pass --preset NAME`,
  );
}

/** Loads the actor of a model directory (needs an initialised tfjs backend). The caller disposes the model. */
export async function loadActor(modelDir: string): Promise<{ model: Qwen2Model; tokenizer: Tokenizer }> {
  const { model, tokenizer } = loadPolicyFiles(await readCheckpointDirFiles(modelDir), modelDir);
  return { model, tokenizer };
}
