// The run configuration (`RunConfig`): every knob of a StarPO / StarPO-S run, validated before any work starts.
//
// The browser worker and the Node CLI build the same Trainer from the same RunConfig, so this folder is pure
// TypeScript (zod + yaml, no tfjs, no fs). One job per file:
//   * limits.ts: CONFIG_LIMITS, the upper bound of every number of the config;
//   * schema.ts: the zod schema, one section per part of RAGEN; every field says what it means, its unit, RAGEN's
//     default and the RAGEN / veRL key it maps to (filterSchema.ts holds the `filter` section, shared with filter.ts);
//   * defaults.ts: defaultRunConfig(), RAGEN v1's config/base.yaml merged with veRL's defaults (spec §5.1), i.e.
//     StarPO-S on SimpleSokoban with Qwen2.5-0.5B-Instruct. Where RAGEN has two versions (v1 code / paper / v2) the
//     v1 code value is the default and the other is an option; the field's text says which;
//   * checks.ts: the cross-field rules (RunConfigSchema = fields + rules), configWarnings, configNotes, assertRunnable;
//   * parse.ts: parseRunConfig / loadConfigText, a partial config laid over the defaults and checked, and
//     applyOverrides, the CLI's `--set key.path=value`; messages.ts words the errors (ConfigError, did-you-mean);
//   * docs.ts: describeConfig / renderConfigDoc, the reference tables of docs/config.md;
//   * agent.ts: what the agent reads from a config (envBlocks, envGroupsConfig, agentFormatFromConfig, custom boards).
// Presets live in ../presets.ts. Import from this index, not from the files inside.
export {
  agentFormatFromConfig,
  customBoardBlock,
  customBoardEnvGroups,
  envBlocks,
  envGroupsConfig,
  trainedTags,
} from './agent';
export { RunConfigSchema, assertRunnable, configNotes, configWarnings } from './checks';
export { defaultRunConfig } from './defaults';
export { CONFIG_LIMITS } from './limits';
export { configDifferences, describeConfig, renderConfigDoc, type ConfigDocRow } from './docs';
export { ConfigError, didYouMean } from './messages';
export {
  applyOverrides,
  shownOverride,
  checkConfigShape,
  loadConfigText,
  mergeConfigInput,
  parseRunConfig,
  readConfigText,
} from './parse';
export {
  KL_ESTIMATORS,
  LOSS_AGG_MODES,
  RunConfigFieldsSchema,
  type ActorConfig,
  type AgentConfig,
  type AlgorithmConfig,
  type CollapseConfig,
  type CriticConfig,
  type DeepPartial,
  type EarlyStopSettings,
  type EchoTrapSettings,
  type EnvBlock,
  type FilterConfig,
  type KlEstimator,
  type LoraConfig,
  type LossAggMode,
  type ModelConfig,
  type RolloutConfig,
  type RunConfig,
  type RunConfigInput,
  type TrainerConfig,
} from './schema';
