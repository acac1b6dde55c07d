// The README.md of a `ragen export --to ragen` directory: what is in it, the exact commands to launch the run in
// RAGEN (one machine, and a Ray cluster), what RAGEN will do differently from the run it came from, how each env
// tag's levels differ, and how to bring the metrics back (`ragen import-metrics`).
import * as path from 'node:path';
import type { Qwen2Config } from '../model/config';
import { CRITIC_DIR, POLICY_DIR, RAGEN_CONFIG_NAME, type ExportPlan } from './exportLayout';
import { ENV_RULE_DIFFERENCES, RAGEN_MAX_MODEL_LEN, type RagenConfig, type RagenWarning } from './ragenMapping';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const show = (v: unknown) => (v === undefined ? '(unset)' : JSON.stringify(v));

function warningRows(warnings: readonly RagenWarning[]): string[] {
  return [
    '| setting | value | what happens in RAGEN |',
    '|---|---|---|',
    ...warnings.map((w) => `| \`${w.key}\` | \`${cell(show(w.value))}\` | ${cell(w.message)} |`),
  ];
}

export function renderExportReadme(o: {
  plan: ExportPlan;
  ragen: RagenConfig;
  critic: boolean;
  modelConfig: Qwen2Config;
}): string {
  const { plan, ragen, critic, modelConfig } = o;
  const name = path.basename(plan.runDir);
  const differs = ragen.warnings.filter((w) => !w.harmless);
  const notes = ragen.warnings.filter((w) => w.harmless);
  const params =
    modelConfig.vocab_size * modelConfig.hidden_size +
    modelConfig.num_hidden_layers *
      (4 * modelConfig.hidden_size * modelConfig.hidden_size +
        3 * modelConfig.hidden_size * modelConfig.intermediate_size);
  const modelArgs = `model_path="$EXPORT/${POLICY_DIR}"${critic ? ` critic.model.path="$EXPORT/${CRITIC_DIR}"` : ''}`;
  const lines = [
    `# ${name}, step ${plan.step}, exported for RAGEN`,
    '',
    `Written by \`ragen export --to ragen\` from \`${plan.runDir}\` (checkpoint step ${plan.step}) with ${plan.dtype} weights,`,
    `for ${plan.nodes} node(s) x ${plan.gpusPerNode} GPU(s). RAGEN (veRL on Ray: FSDP training, vLLM rollouts) continues the run at a`,
    'scale this project does not grow into; this directory is everything it needs.',
    '',
    '| path | what |',
    '|---|---|',
    `| \`${POLICY_DIR}/\` | the policy, a Hugging Face Qwen2 model directory (about ${(params / 1e6).toFixed(1)} M parameters): RAGEN's \`model_path\` (actor, reference, vLLM rollouts) |`,
    ...(critic
      ? [
          `| \`${CRITIC_DIR}/\` | the run's value model (Qwen2ForTokenClassification, one label): RAGEN's \`critic.model.path\` |`,
        ]
      : []),
    `| \`${RAGEN_CONFIG_NAME}.yaml\` | a Hydra config extending RAGEN's \`config/base.yaml\` with this run's settings |`,
    '| `overrides.txt` | the same settings as a Hydra override list, one per line |',
    '',
    'The model directories keep "qwen" in their names on purpose: RAGEN finds its chat-turn tokens only for tokenizers',
    'whose path contains "qwen" (it masks the loss by `<|im_start|>` turns). The tokenizer is this run\'s own',
    `(${modelConfig.vocab_size} ids), with the Qwen chat template; RAGEN looks its special tokens up by text, not by Qwen's ids.`,
    '',
    '## Launch',
    '',
    "On the machine that drives the run (RAGEN installed with `bash scripts/setup_ragen.sh`), from RAGEN's checkout:",
    '',
    '```bash',
    `EXPORT=/path/to/this/directory   # written here as ${plan.out}`,
    `python train.py --config-dir "$EXPORT" --config-name ${RAGEN_CONFIG_NAME} ${modelArgs}`,
    '```',
    '',
    'The model paths are repeated on the command line so that the directory can move; the YAML holds the paths of the',
    'machine it was written on. The same run from the override list (each line one argument):',
    '',
    '```bash',
    `xargs -d '\\n' -a "$EXPORT/overrides.txt" python train.py --config-name base ${modelArgs}`,
    '```',
    '',
  ];
  if (plan.nodes > 1) {
    lines.push(
      `On a Ray cluster of ${plan.nodes} nodes: start the head (\`ray start --head\`), join each other node to it`,
      '(`ray start --address=HEAD_IP:6379`), make this directory reachable at the same path on every node, then launch',
      'the command above on the head node. `trainer.nnodes` and `trainer.n_gpus_per_node` are already set.',
      '',
    );
  }
  if (plan.gpusPerNode > 1) {
    lines.push(
      `With ${plan.gpusPerNode} GPUs per node, vLLM runs tensor-parallel size 1 on each (\`tp_size_check=false\`); veRL splits`,
      '`ppo_mini_batch_size` across all GPUs, so it must be a multiple of their count.',
      '',
    );
  }
  if (modelConfig.max_position_embeddings < RAGEN_MAX_MODEL_LEN) {
    lines.push(
      `\`actor_rollout_ref.rollout.max_model_len\` is ${modelConfig.max_position_embeddings} (the model's \`max_position_embeddings\`; RAGEN's`,
      `default ${RAGEN_MAX_MODEL_LEN} would be refused by vLLM): prompt, turns and responses must fit in it.`,
      '',
    );
  }
  lines.push('## What RAGEN will do differently', '');
  if (differs.length) lines.push(...warningRows(differs), '');
  else lines.push('Nothing: every setting of this run that changes training has a RAGEN key with the same value.', '');
  lines.push(
    '## Env tags: same rules, other levels for the same seed',
    '',
    'Seeds do not carry over between this project and RAGEN: each environment draws its levels from its own PRNG. The',
    "rules, rewards and level distributions are RAGEN's, so success rates compare; single seeds and trajectories do not.",
    'Validation uses seeds `seed.val` ... `seed.val + env_groups - 1` in both, but they are different levels.',
    '',
    ...ragen.tags.map((tag) => `- **${tag}**: ${ENV_RULE_DIFFERENCES[tag] ?? 'no known difference'}`),
    '',
    '## Settings RAGEN has no key for (it behaves the same here)',
    '',
    ...warningRows(notes),
    '',
    '## Bring the results back',
    '',
    'RAGEN logs to Weights & Biases under the same metric keys as this project (`train/<Tag>/success`,',
    "`val-env/<Tag>/success`, `rollout/in_group_std`, `actor/entropy_loss`, ...). Export the run's history (the run page's",
    'CSV export, or `run.history()` / `run.scan_history()` saved as JSON or CSV) and turn it into a run directory that the',
    "playground and the experiments' plots read:",
    '',
    '```bash',
    `npx ragen import-metrics history.csv --out runs/${name}-ragen --ragen-config outputs/DATE/TIME/.hydra/config.yaml`,
    '```',
    '',
  );
  return lines.join('\n');
}
