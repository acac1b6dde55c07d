// Named evaluation suites: which tasks a checkpoint is judged on, given what it was trained on.
//
// Every suite plays RAGEN's validation protocol (spec §1, §10.15): fixed initial states from seed 123 upwards
// (agent.seedVal), the run's turn / action / token limits, sampling at the validation temperature (0.5). What
// changes between suites is the task:
//   held-out  the training env itself (same tag and env config) on seeds the trainer never trains on: training
//             seeds start at 10000 (spec §3.1), validation seeds at 123;
//   ood       out-of-distribution variants the agent never saw, per family of the training env:
//     Sokoban agent     LargerSokoban (8x8, two boxes), SokobanDifferentGridVocab (same rules, other symbols),
//                       FrozenLake (another grid task with the same action names): RAGEN's generalisation set.
//     Bandit agent      BanditTest (Trader / Librarian, RAGEN's test pair) and <Tag>-Swapped: the training pair with
//                       the risky and safe names exchanged (RAGEN's "reverse" run), so an agent that memorised a
//                       name rather than reading its meaning scores near 0 there.
//     FrozenLake agent  our choice (RAGEN has none): FrozenLake-NoSlip (successRate 1: a planner should do better,
//                       an agent that only learned to hedge against slips will not), FrozenLake-6x6 (a bigger lake,
//                       same 10-action budget: longer paths), and SimpleSokoban (another grid task, same actions).
//   The out-of-distribution suites keep the training env's observation format (RAGEN-2's coord / grid_coord): an
//   agent trained on CoordSokoban meets LargerSokoban written in coordinates too, and CoordFrozenLake rather than
//   FrozenLake, so the suites test the task, not a change of format.
import {
  BANDIT_DEFAULTS,
  ENV_TAGS,
  envFamily,
  makeEnv,
  type EnvFamily,
  type ObservationFormat,
} from '../../envs/index';

export type SuiteKind = 'held-out' | 'ood';

export interface EvalSuite {
  /** Unique name in a scorecard: the tag for plain suites, `<Tag>-<Variant>` for a changed env config. */
  name: string;
  kind: SuiteKind;
  /** The env tag played (envs/makeEnv). */
  tag: string;
  /** Env config for makeEnv (camelCase keys); undefined = the tag's RAGEN defaults. */
  config?: Record<string, unknown>;
  /** Primitive-action budget per episode; undefined = the tag's default (10 for grids, 1 for Bandit). */
  maxActionsPerTraj?: number;
  /** One line for the table's legend and the docs. */
  description: string;
}

/** A training env block, as RunConfig.agent.trainEnvs holds it. */
export interface TrainEnvLike {
  tag: string;
  config?: Record<string, unknown>;
  maxActionsPerTraj?: number;
}

export type AgentFamily = EnvFamily;

/** Which family of suites fits an agent trained on `tag`. Throws for an unknown tag. */
export function familyOfTag(tag: string): AgentFamily {
  return envFamily(tag);
}

/** The observation format a grid block's states are written in (its config over the tag's default). */
function observationFormatOf(block: TrainEnvLike): ObservationFormat {
  const env = makeEnv(block.tag, block.config) as { config: { observationFormat?: ObservationFormat } };
  return env.config.observationFormat ?? 'grid';
}

/**
 * An out-of-distribution suite of `tag` shown in `format`: a Coord tag stands in for its grid sibling where one
 * exists (its instruction mentions the coordinates), otherwise the format goes into the env config.
 */
function inFormat(suite: EvalSuite, format: ObservationFormat): EvalSuite {
  if (format === 'grid') return suite;
  const coordTag = { SimpleSokoban: 'CoordSokoban', FrozenLake: 'CoordFrozenLake' }[suite.tag];
  const description = `${suite.description}; ${format} observations, as trained`;
  if (format === 'grid_coord' && coordTag !== undefined && suite.config === undefined) {
    return { ...suite, name: suite.name === suite.tag ? coordTag : suite.name, tag: coordTag, description };
  }
  return { ...suite, config: { ...(suite.config ?? {}), observationFormat: format }, description };
}

function sameTask(
  a: { tag: string; config?: Record<string, unknown> },
  b: { tag: string; config?: Record<string, unknown> },
): boolean {
  return a.tag === b.tag && JSON.stringify(a.config ?? {}) === JSON.stringify(b.config ?? {});
}

/** The arm names of a Bandit block (its config over the tag's defaults). */
function armNames(block: TrainEnvLike): { lo: string; hi: string } {
  const defaults = BANDIT_DEFAULTS[block.tag as 'Bandit' | 'BanditTest'];
  const lo = (block.config?.loArmName as string | undefined) ?? defaults.loArmName;
  const hi = (block.config?.hiArmName as string | undefined) ?? defaults.hiArmName;
  return { lo, hi };
}

function oodSuites(first: TrainEnvLike): EvalSuite[] {
  switch (familyOfTag(first.tag)) {
    case 'sokoban': {
      const format = observationFormatOf(first);
      return [
        { name: 'LargerSokoban', kind: 'ood', tag: 'LargerSokoban', description: '8x8 rooms with two boxes' },
        {
          name: 'SokobanDifferentGridVocab',
          kind: 'ood',
          tag: 'SokobanDifferentGridVocab',
          description: 'same rules, other grid symbols',
        },
        {
          name: 'FrozenLake',
          kind: 'ood',
          tag: 'FrozenLake',
          description: 'another grid task with the same action names',
        },
      ].map((s) => inFormat(s as EvalSuite, format));
    }
    case 'bandit': {
      const { lo, hi } = armNames(first);
      return [
        {
          name: 'BanditTest',
          kind: 'ood',
          tag: 'BanditTest',
          description: "RAGEN's test arm names (Trader safe, Librarian risky)",
        },
        {
          name: `${first.tag}-Swapped`,
          kind: 'ood',
          tag: first.tag,
          config: { ...(first.config ?? {}), loArmName: hi, hiArmName: lo },
          description: `training names exchanged (${hi} safe, ${lo} risky)`,
        },
      ];
    }
    case 'frozenlake':
      return [
        {
          name: `${first.tag}-NoSlip`,
          kind: 'ood',
          tag: first.tag,
          config: { ...(first.config ?? {}), successRate: 1 },
          description: 'no slipping: every move goes where intended',
        },
        {
          name: `${first.tag}-6x6`,
          kind: 'ood',
          tag: first.tag,
          config: { ...(first.config ?? {}), size: 6 },
          description: 'a 6x6 lake, same 10-action budget',
        },
        inFormat(
          {
            name: 'SimpleSokoban',
            kind: 'ood',
            tag: 'SimpleSokoban',
            description: 'another grid task with the same action names',
          },
          observationFormatOf(first),
        ),
      ];
  }
}

/**
 * The default suites of an agent trained on `trainEnvs`: one held-out suite per training block (its tag, env
 * config and action budget), then the out-of-distribution suites of the first block's family, minus any that
 * repeat a held-out task.
 */
export function defaultSuites(trainEnvs: readonly TrainEnvLike[]): EvalSuite[] {
  if (trainEnvs.length === 0) throw new Error('defaultSuites: the run has no training env');
  const heldOut: EvalSuite[] = [];
  for (const block of trainEnvs) {
    familyOfTag(block.tag); // validates the tag
    if (heldOut.some((s) => sameTask(s, block))) continue;
    const name = heldOut.some((s) => s.name === block.tag) ? `${block.tag}-${heldOut.length + 1}` : block.tag;
    heldOut.push({
      name,
      kind: 'held-out',
      tag: block.tag,
      ...(block.config !== undefined ? { config: structuredClone(block.config) } : {}),
      ...(block.maxActionsPerTraj !== undefined ? { maxActionsPerTraj: block.maxActionsPerTraj } : {}),
      description: 'the training env on held-out seeds (123 upwards)',
    });
  }
  const ood = oodSuites(trainEnvs[0]).filter((s) => !heldOut.some((h) => sameTask(h, s) || h.name === s.name));
  return [...heldOut, ...ood];
}

/**
 * `--env TAG`: the suites that play TAG; when none of the default suites does, one ad-hoc suite of TAG with its
 * RAGEN defaults (held-out if TAG is a training tag, else ood). Throws for an unknown tag.
 */
export function suitesForTag(suites: readonly EvalSuite[], tag: string, trainTags: readonly string[]): EvalSuite[] {
  if (!ENV_TAGS.includes(tag)) throw new Error(`unknown env tag '${tag}' (valid tags: ${ENV_TAGS.join(', ')})`);
  const matching = suites.filter((s) => s.tag === tag);
  if (matching.length > 0) return matching;
  return [
    {
      name: tag,
      kind: trainTags.includes(tag) ? 'held-out' : 'ood',
      tag,
      description: `${tag} with its RAGEN defaults`,
    },
  ];
}
