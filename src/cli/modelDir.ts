// Where a run's initial policy lives on disk (Node only): `model.path`, else the shipped warm start under public/.
// `ragen train` and the step benchmarks resolve it the same way, before any work.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunConfig } from '../starpo/config';
import { UsageError } from './usage';

/** The repository root (public/ holds the warm-start checkpoints). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where a config's initial policy lives: model.path, else public/<model.warmStart>. Throws UsageError when missing. */
export function modelDirFor(config: RunConfig): string {
  if (config.model.path !== null) {
    const dir = path.resolve(config.model.path);
    if (!fs.existsSync(path.join(dir, 'config.json'))) {
      throw new UsageError(`model.path ${dir} is not a Hugging Face model directory (no config.json there)`);
    }
    return dir;
  }
  if (config.model.warmStart !== null) {
    const dir = path.join(REPO_ROOT, 'public', config.model.warmStart);
    if (!fs.existsSync(path.join(dir, 'model.safetensors'))) {
      const name = config.model.warmStart.split('/').pop();
      throw new UsageError(
        `no warm-start checkpoint at public/${config.model.warmStart}: build it first with \`npx ragen warmstart --preset ${name}\``,
      );
    }
    return dir;
  }
  throw new UsageError('the config names no initial policy: set model.path (--set model=DIR) or model.warmStart');
}
