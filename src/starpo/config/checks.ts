// The rules that tie config fields together, checked once every field has the right type (./schema.ts), and the
// legal-but-suspicious settings that only earn a warning.
import { ENV_TAGS, assertEnvPlayable } from '../../../envs/index';
import { checkFilterConfigV1 } from '../filter';
import { ConfigError, didYouMean } from './messages';
import { RunConfigFieldsSchema, type EnvBlock, type RunConfig } from './schema';

/** The whole RunConfig schema: every field (./schema.ts), then the cross-field rules below, each naming its key. */
export const RunConfigSchema = RunConfigFieldsSchema.superRefine((config, ctx) => {
  for (const problem of crossFieldProblems(config))
    ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});

interface Problem {
  path: (string | number)[];
  message: string;
}

function crossFieldProblems(c: RunConfig): Problem[] {
  const problems: Problem[] = [];
  const add = (path: (string | number)[], message: string) => problems.push({ path, message });

  // Env blocks: known tags, a config the env accepts and can generate a level / map from (one trial reset with the
  // split's first seed), and group counts that add up (RAGEN asserts the sums).
  for (const split of ['trainEnvs', 'valEnvs'] as const) {
    c.agent[split].forEach((block, i) => {
      if (!ENV_TAGS.includes(block.tag)) {
        add(
          ['agent', split, i, 'tag'],
          `unknown env tag '${block.tag}'${didYouMean(block.tag, ENV_TAGS)} (valid tags: ${ENV_TAGS.join(', ')})`,
        );
      } else if (block.config !== undefined) {
        try {
          assertEnvPlayable(
            block.tag,
            block.config,
            split === 'trainEnvs' ? (c.agent.seedTrain ?? 0) : c.agent.seedVal,
          );
        } catch (err) {
          add(['agent', split, i, 'config'], `env ${block.tag} rejects this config: ${(err as Error).message}`);
        }
      }
    });
  }
  const sumGroups = (blocks: readonly EnvBlock[]) => blocks.reduce((sum, b) => sum + b.nGroups, 0);
  if (sumGroups(c.agent.trainEnvs) !== c.agent.envGroups) {
    add(
      ['agent', 'trainEnvs'],
      `the nGroups of trainEnvs sum to ${sumGroups(c.agent.trainEnvs)}, but agent.envGroups is ${c.agent.envGroups}`,
    );
  }
  if (sumGroups(c.agent.valEnvs) !== c.agent.valGroups) {
    add(
      ['agent', 'valEnvs'],
      `the nGroups of valEnvs sum to ${sumGroups(c.agent.valEnvs)}, but agent.valGroups is ${c.agent.valGroups}`,
    );
  }

  // Tiny model shape: heads split the width evenly, K/V heads are shared by whole groups of query heads, and
  // rotary embeddings rotate pairs of dimensions.
  const t = c.model.tiny;
  if (t.hiddenSize % t.numHeads !== 0) {
    add(['model', 'tiny', 'numHeads'], `numHeads ${t.numHeads} must divide hiddenSize ${t.hiddenSize}`);
  } else if ((t.hiddenSize / t.numHeads) % 2 !== 0) {
    add(
      ['model', 'tiny', 'hiddenSize'],
      `head size hiddenSize/numHeads = ${t.hiddenSize / t.numHeads} must be even (rotary embeddings)`,
    );
  }
  if (t.numHeads % t.numKvHeads !== 0)
    add(['model', 'tiny', 'numKvHeads'], `numKvHeads ${t.numKvHeads} must divide numHeads ${t.numHeads}`);

  // Batching: veRL asserts mini % micro == 0; RAGEN asserts the filtered batch fills at least one mini-batch.
  const { ppoMiniBatchSize: mini, ppoMicroBatchSize: micro } = c.actor;
  if (mini % micro !== 0)
    add(['actor', 'ppoMicroBatchSize'], `ppoMicroBatchSize ${micro} must divide ppoMiniBatchSize ${mini}`);
  const trajectories = c.agent.envGroups * c.agent.groupSize;
  if (c.filter.strategy === 'ratio') {
    try {
      checkFilterConfigV1({
        numGroups: c.agent.envGroups,
        groupSize: c.agent.groupSize,
        ratio: c.filter.ratio,
        miniBatchSize: mini,
      });
    } catch (err) {
      add(['filter', 'ratio'], (err as Error).message);
    }
  } else {
    if (trajectories < mini) {
      add(
        ['actor', 'ppoMiniBatchSize'],
        `ppoMiniBatchSize ${mini} exceeds the ${trajectories} trajectories of a step (envGroups × groupSize)`,
      );
    }
    const v = c.filter.value;
    if (c.filter.strategy === 'top_k' && v > 1)
      add(['filter', 'value'], `top_k keeps a fraction of the groups: value must be in (0, 1], got ${v}`);
    if (c.filter.strategy === 'top_k_abs' && (!Number.isInteger(v) || v > c.agent.envGroups)) {
      add(
        ['filter', 'value'],
        `top_k_abs keeps a number of groups: value must be an integer from 1 to envGroups ${c.agent.envGroups}, got ${v}`,
      );
    }
    if (c.filter.strategy === 'min_p' && v > 1)
      add(['filter', 'value'], `min_p is a ratio to the best score: value must be in (0, 1], got ${v}`);
  }

  if (c.algorithm.stepAdvantage.weight > 0) {
    if (c.algorithm.advEstimator !== 'grpo') {
      add(
        ['algorithm', 'stepAdvantage', 'weight'],
        `stepAdvantage.weight ${c.algorithm.stepAdvantage.weight} adds to GRPO's episode-level advantage: it needs advEstimator 'grpo', not '${c.algorithm.advEstimator}'`,
      );
    }
    if (c.agent.contextWindowMode !== 'single_turn') {
      add(
        ['algorithm', 'stepAdvantage', 'weight'],
        "stepAdvantage.weight > 0 credits each turn on its own: it needs agent.contextWindowMode 'single_turn' (one training sample per turn)",
      );
    }
  }

  // GRPO without group normalisation trains on raw rewards: RAGEN v1 does this silently (spec §10.5). We refuse:
  // a user who picks grpo wants a group baseline, and 'mean' (Dr.GRPO) or 'mean_std' (GRPO) give one.
  if (c.algorithm.advEstimator === 'grpo') {
    const { method, grouping } = c.algorithm.rewardNormalization;
    if (method === 'identity') {
      add(
        ['algorithm', 'rewardNormalization', 'method'],
        "advEstimator 'grpo' with rewardNormalization.method 'identity' would train on raw rewards (RAGEN v1's silent " +
          "pitfall, spec §10.5): use 'mean_std' (GRPO) or 'mean' (Dr.GRPO)",
      );
    } else if (grouping === 'state' && c.agent.groupSize === 1) {
      add(
        ['agent', 'groupSize'],
        "advEstimator 'grpo' normalises within each env group, but groupSize is 1, so there is nothing to compare " +
          "against: raise groupSize or use rewardNormalization.grouping 'inductive' / 'batch'",
      );
    }
  }
  return problems;
}

/**
 * Settings that are legal but probably not what the user meant, each saying what to change; the CLI prints them,
 * the UI may show them. (Errors are in crossFieldProblems; these never stop a run.)
 */
export function configWarnings(c: RunConfig): string[] {
  const warnings: string[] = [];
  if (c.algorithm.useKlInReward && c.algorithm.klCoef === 0)
    warnings.push('algorithm.useKlInReward is true but klCoef is 0: no KL penalty is applied');
  if (!c.algorithm.useKlInReward && c.algorithm.klCoef > 0) {
    warnings.push(
      `algorithm.klCoef is ${c.algorithm.klCoef} but useKlInReward is false: the coefficient is ignored (spec §4.6)`,
    );
  }
  if (c.actor.useKlLoss && c.actor.klLossCoef === 0)
    warnings.push('actor.useKlLoss is true but klLossCoef is 0: no KL loss is applied');
  if (!c.actor.useKlLoss && c.actor.klLossCoef > 0)
    warnings.push(`actor.klLossCoef is ${c.actor.klLossCoef} but useKlLoss is false: the coefficient is ignored`);
  if (c.model.path !== null && c.model.warmStart !== null)
    warnings.push('model.path is set, so model.warmStart is ignored');
  if (c.collapse.enabled && !c.model.enableThink)
    warnings.push(
      'collapse.enabled is true but model.enableThink is false: there is no reasoning to diagnose, so nothing is computed (as RAGEN-2)',
    );
  if (c.collapse.enabled && !c.collapse.firstTurn && !c.collapse.trajectory)
    warnings.push(
      'collapse.enabled is true but both collapse.firstTurn and collapse.trajectory are false: nothing is computed',
    );
  return warnings;
}

/**
 * Facts about how legal settings interact that a researcher may want when reading the metrics, and that ask for no
 * change: RAGEN's own defaults produce them. docs/config.md lists them under each preset; `ragen train` does not
 * print them, since there is nothing to act on.
 */
export function configNotes(c: RunConfig): string[] {
  const notes: string[] = [];
  if (c.filter.strategy === 'ratio' && c.actor.ppoEpochs === 1 && c.actor.clipRatioHigh !== c.actor.clipRatioLow) {
    const kept = Math.floor(c.filter.ratio * c.agent.envGroups + 1e-9) * c.agent.groupSize;
    // single_turn trains one sample per turn: several turns per trajectory fill several mini-batches.
    const samplesPerTrajectory = c.agent.contextWindowMode === 'single_turn' ? c.agent.maxTurn : 1;
    if (kept * samplesPerTrajectory <= c.actor.ppoMiniBatchSize) {
      notes.push(
        `the filtered batch (${kept} trajectories) is one mini-batch (${c.actor.ppoMiniBatchSize}), so each rollout gets one ` +
          'optimizer step at ratio 1 and PPO clipping, clip-higher included, never acts: `actor/pg_clipfrac` stays 0, ' +
          "as with RAGEN's defaults (spec §10.7). Clipping acts with `actor.ppoEpochs` above 1 or a smaller " +
          '`actor.ppoMiniBatchSize`',
      );
    }
  }
  return notes;
}

/**
 * Throws a ConfigError when a valid config still cannot start, e.g. a preset for a pretrained model whose local
 * copy was not given. Call it after overrides, before any work.
 */
export function assertRunnable(c: RunConfig): void {
  if (c.model.pretrained !== null && c.model.path === null) {
    const dir = c.model.pretrained.split('/').pop();
    throw new ConfigError(
      `config key 'model.path' is required: this run starts from ${c.model.pretrained}, which is not downloaded; ` +
        `pass --set model=/path/to/${dir} (a directory with config.json, model.safetensors and tokenizer.json)`,
      [],
    );
  }
}
