// What a `ragen export --to ragen` directory holds, shared by the command that writes it (src/cli/export.ts) and the
// README that describes it (./exportReadme.ts).
import type { ExportDtype } from '../model/hfExport';
import type { RunConfig } from '../starpo/config';

/** The policy as a Hugging Face model directory; "qwen" in the name, as RAGEN picks its chat tokens by it. */
export const POLICY_DIR = 'qwen2-policy';
/** The value model of a PPO run (RAGEN's critic.model.path). */
export const CRITIC_DIR = 'qwen2-critic';
/** The Hydra config's name: `python train.py --config-dir OUT --config-name ragen_export`. */
export const RAGEN_CONFIG_NAME = 'ragen_export';

/** One export, checked before any file is written: which run, which checkpoint, where to, and how. */
export interface ExportPlan {
  runDir: string;
  out: string;
  config: RunConfig;
  step: number;
  checkpointDir: string;
  dtype: ExportDtype;
  gpusPerNode: number;
  nodes: number;
}
