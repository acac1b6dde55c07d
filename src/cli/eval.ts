// `ragen eval`: the scorecard of a checkpoint on held-out and out-of-distribution suites (src/eval), printed as a
// table and optionally written as JSON; `--baseline` adds deltas against another checkpoint (or a scorecard JSON),
// and `--fail-on-regression PCT` exits 1, naming the suites, when any suite's success drops by more than PCT points.
// `--seed-start N` moves the evaluated initial states (default: the run's agent.seedVal, RAGEN's 123);
// `--trajectories FILE` writes every played episode as JSONL (src/eval/episodes.ts).
// Bad input (missing directory, unknown env, bad numbers) exits 2 before any work.
import type { Command } from 'commander';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ENV_TAGS } from '../../envs/index';
import { BACKEND_CHOICES, isBackendChoice, type BackendChoice } from '../model/backend';
import { ConfigError, applyOverrides, shownOverride } from '../starpo/config';
import {
  PROTOCOL_LIMITS,
  assertSuitesFitContext,
  checkProtocol,
  compareScorecards,
  findRegressions,
  formatScorecard,
  parseScorecardJson,
  scoreModel,
  scorecardToJson,
  suitesForTag,
  type Comparison,
  type EvalProtocol,
  type EvalSuite,
  type Scorecard,
} from '../eval/index';
import {
  agentFormatFromConfig,
  loadActor,
  protocolFromConfig,
  resolveCheckpoint,
  suitesFromConfig,
  type ResolvedCheckpoint,
} from '../eval/load';
import { EpisodeFileWriter } from '../eval/episodeFile';
import { readModelContext } from '../model/modelContext';
import { checkOutputFile, writeFileAtomic } from '../node/safeWrite';
import { FLAG_LIMITS, intFlag, numberFlag } from './flags';
import { UsageError } from './usage';
import { chooseCliBackend } from '../model/webgpuProbe';

interface EvalFlags {
  checkpoint?: string;
  env?: string;
  episodes?: string;
  seedStart?: string;
  trajectories?: string;
  k?: string;
  backend?: string;
  seed?: string;
  temperature?: string;
  batchSize?: string;
  preset?: string;
  baselinePreset?: string;
  set?: string[];
  out?: string;
  baseline?: string;
  failOnRegression?: string;
  quiet?: boolean;
  force?: boolean;
}

/**
 * The regression gate's failure: the CLI's generic error handler exits 1 with it. Node's console prints errors
 * through util.inspect, which asks this custom hook first: the user sees one sentence, not a stack trace.
 */
export class RegressionGateError extends Error {
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `ragen eval: ${this.message}`;
  }
}

export function registerEval(program: Command): void {
  program
    .command('eval')
    .description('scorecard of a checkpoint on held-out and out-of-distribution suites (table; JSON with --out)')
    .requiredOption(
      '--checkpoint <dir>',
      'a checkpoint directory, a run directory (newest checkpoint) or a warm-start directory',
    )
    .option('--env <tag>', `only the suites playing this env tag (${ENV_TAGS.join(', ')})`)
    .option('--episodes <n>', "initial states (seeds) per suite (default: the run's agent.valGroups)")
    .option(
      '--seed-start <n>',
      "first initial state (env seed) evaluated (default: the run's agent.seedVal, RAGEN 123)",
    )
    .option(
      '--trajectories <file.jsonl>',
      'also write every played episode as JSONL: observations, think/answer text, actions, rewards',
    )
    .option('--k <k>', 'rollouts per seed, for pass@k', '1')
    .option('--backend <name>', "tfjs backend: webgpu, wasm, cpu or auto (default: the run's trainer.backend)")
    .option('--seed <s>', "sampling seed (default: the run's trainer.seed)")
    .option('--temperature <t>', "sampling temperature (default: the run's rollout.valTemperature, RAGEN 0.5)")
    .option('--batch-size <n>', 'episodes per generate batch (memory, progress granularity; part of determinism)', '32')
    .option('--preset <name>', 'the run config of a bare model directory (one without run config or warmstart.json)')
    .option('--baseline-preset <name>', 'the same, for a bare --baseline directory')
    .option(
      '--set <key=value>',
      "override a key of the checkpoint's run config (and --baseline's), as for ragen train, e.g. --set agent.maxTurn=10 (repeatable)",
      (v: string, acc: string[]) => [...acc, v],
      [],
    )
    .option('--out <file.json>', 'also write the scorecard (and deltas) as JSON')
    .option(
      '--baseline <dir|file.json>',
      'compare with another checkpoint (same suites and protocol) or a scorecard JSON',
    )
    .option(
      '--fail-on-regression <pct>',
      "exit 1 when any suite's success drops by more than PCT percentage points vs --baseline",
    )
    .option('--force', "replace an existing --out / --trajectories file (never a run's own files)")
    .option('--quiet', 'no progress lines on stderr')
    .action(async (flags: EvalFlags) => {
      await runEval(flags);
    });
}

function usage<T>(what: () => T): T {
  try {
    return what();
  } catch (err) {
    if (err instanceof UsageError) throw err;
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw new UsageError((err as Error).message);
  }
}

/** Everything checked before any model is loaded: the command line as a plan. */
interface EvalPlan {
  target: ResolvedCheckpoint;
  suites: EvalSuite[];
  protocol: EvalProtocol;
  backend: BackendChoice;
  baseline:
    | { kind: 'scorecard'; card: Scorecard; source: string }
    | { kind: 'checkpoint'; target: ResolvedCheckpoint; source: string }
    | null;
  failOnRegression: number | undefined;
  out: string | undefined;
  trajectories: string | undefined;
}

export function planEval(flags: EvalFlags): EvalPlan {
  return usage(() => {
    if (!flags.checkpoint) throw new UsageError('--checkpoint DIR is required');
    const L = PROTOCOL_LIMITS;
    const episodes = intFlag(flags.episodes, '--episodes', 1, L.episodes);
    const seedStart = intFlag(flags.seedStart, '--seed-start', 0, L.seed);
    const k = intFlag(flags.k, '--k', 1, L.k);
    const seed = intFlag(flags.seed, '--seed', 0, L.seed);
    const batchSize = intFlag(flags.batchSize, '--batch-size', 1, L.batchSize);
    const temperature = numberFlag(flags.temperature, '--temperature', 0, L.temperature);
    const failOnRegression = numberFlag(
      flags.failOnRegression,
      '--fail-on-regression',
      0,
      FLAG_LIMITS.regressionPoints,
    );
    if (failOnRegression !== undefined && !flags.baseline)
      throw new UsageError('--fail-on-regression needs --baseline (what to compare against)');
    if (flags.backend !== undefined && !isBackendChoice(flags.backend)) {
      throw new UsageError(`--backend must be one of ${BACKEND_CHOICES.join(', ')}, got '${flags.backend}'`);
    }
    if (flags.env !== undefined && !ENV_TAGS.includes(flags.env)) {
      throw new UsageError(`unknown env tag '${flags.env}' (valid tags: ${ENV_TAGS.join(', ')})`);
    }
    for (const [flag, file] of [
      ['--out', flags.out],
      ['--trajectories', flags.trajectories],
    ] as const) {
      if (
        file !== undefined &&
        flags.baseline !== undefined &&
        fs.existsSync(flags.baseline) &&
        sameFile(file, flags.baseline)
      ) {
        throw new UsageError(
          `${flag} ${file} is the --baseline: writing it would replace what is compared against; choose another path`,
        );
      }
    }
    const force = { force: !!flags.force };
    if (flags.out !== undefined) checkOutputFile('--out', flags.out, force);
    if (flags.trajectories !== undefined) checkOutputFile('--trajectories', flags.trajectories, force);
    if (
      flags.out !== undefined &&
      flags.trajectories !== undefined &&
      path.resolve(flags.out) === path.resolve(flags.trajectories)
    ) {
      throw new UsageError(`--out and --trajectories name the same file (${flags.out}); give each its own`);
    }
    // The suites come from agent.trainEnvs (held-out seeds) and their out-of-distribution variants, never from
    // agent.valEnvs: an override there would be checked and then silently not played.
    const valEnvKey = flags.set?.find((o) => /^\s*agent\.valEnvs\b/.test(o));
    if (valEnvKey !== undefined) {
      throw new UsageError(
        `--set ${valEnvKey.split('=')[0].trim()}: ragen eval plays suites built from agent.trainEnvs (and their out-of-distribution variants), ` +
          'not agent.valEnvs; override agent.trainEnvs.N... or choose the env with --env',
      );
    }
    // --set changes the run config the checkpoint (and a checkpoint baseline) is played with.
    const overridden = (t: ResolvedCheckpoint): ResolvedCheckpoint =>
      flags.set?.length
        ? {
            ...t,
            config: applyOverrides(t.config, flags.set),
            configSource: `${t.configSource}, --set ${flags.set.map(shownOverride).join(' ')}`,
          }
        : t;
    const target = overridden(resolveCheckpoint(flags.checkpoint, flags.preset));
    let suites = suitesFromConfig(target.config);
    if (flags.env !== undefined)
      suites = suitesForTag(
        suites,
        flags.env,
        target.config.agent.trainEnvs.map((b) => b.tag),
      );
    const protocol = protocolFromConfig(target.config, {
      ...(episodes !== undefined ? { episodes } : {}),
      ...(seedStart !== undefined ? { baseSeed: seedStart } : {}),
      ...(k !== undefined ? { k } : {}),
      ...(seed !== undefined ? { seed } : {}),
      ...(batchSize !== undefined ? { batchSize } : {}),
      ...(temperature !== undefined ? { temperature } : {}),
    });
    checkProtocol(protocol); // the seeds' end (--seed-start + --episodes) and episodes x k, before any work
    let baseline: EvalPlan['baseline'] = null;
    if (flags.baseline) {
      if (fs.existsSync(flags.baseline) && fs.statSync(flags.baseline).isFile()) {
        const card = parseScorecardJson(fs.readFileSync(flags.baseline, 'utf8'), flags.baseline);
        baseline = { kind: 'scorecard', card, source: flags.baseline };
      } else if (!fs.existsSync(flags.baseline)) {
        throw new UsageError(`--baseline ${flags.baseline} does not exist`);
      } else {
        baseline = {
          kind: 'checkpoint',
          target: overridden(resolveCheckpoint(flags.baseline, flags.baselinePreset)),
          source: flags.baseline,
        };
      }
    }
    // Every suite's prompt plus responses must fit the model's positions, the baseline's too (same suites).
    for (const checked of [target, ...(baseline?.kind === 'checkpoint' ? [baseline.target] : [])]) {
      const context = readModelContext(checked.modelDir);
      assertSuitesFitContext(
        suites,
        agentFormatFromConfig(checked.config),
        protocol.baseSeed,
        context.countTokens,
        context.maxPositions,
      );
    }
    const backend = (flags.backend ?? target.config.trainer.backend) as EvalPlan['backend'];
    return {
      target,
      suites,
      protocol,
      backend,
      baseline,
      failOnRegression,
      out: flags.out,
      trajectories: flags.trajectories,
    };
  });
}

async function scoreCheckpoint(
  name: string,
  target: ResolvedCheckpoint,
  suites: EvalSuite[],
  protocol: EvalProtocol,
  quiet: boolean,
  episodes: EpisodeFileWriter | null,
): Promise<Scorecard> {
  let loaded: Awaited<ReturnType<typeof loadActor>>;
  try {
    loaded = await loadActor(target.modelDir);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const start = Date.now();
  try {
    return await scoreModel(name, loaded.model, loaded.tokenizer, target.config, {
      suites,
      protocol,
      onEpisodes: episodes ? (suite, played) => episodes.write(name, suite, protocol.k, played) : undefined,
      onProgress: quiet
        ? undefined
        : (p) =>
            process.stderr.write(
              `eval ${name}: suite ${p.suiteIndex + 1}/${p.suiteCount} ${p.suite}: ${p.episodesDone}/${p.episodesTotal} episodes ` +
                `(${((Date.now() - start) / 1000).toFixed(1)} s)\n`,
            ),
    });
  } finally {
    loaded.model.dispose();
  }
}

/** True when two paths name the same existing file (links followed). */
function sameFile(a: string, b: string): boolean {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return path.resolve(a) === path.resolve(b);
  }
}

export async function runEval(flags: EvalFlags): Promise<void> {
  const plan = planEval(flags);
  const quiet = !!flags.quiet;
  const backend = await chooseCliBackend(plan.backend, quiet ? () => {} : (line) => process.stderr.write(`${line}\n`));
  if (!quiet) process.stderr.write(`eval: ${plan.target.modelDir} (${plan.target.configSource}) on ${backend.name}\n`);
  const episodes = plan.trajectories !== undefined ? new EpisodeFileWriter(plan.trajectories) : null;
  try {
    await scoreAndReport(flags, plan, quiet, episodes);
  } catch (err) {
    // Nothing to undo once the file was committed (a failed regression gate comes after that).
    episodes?.abort();
    throw err;
  }
}

async function scoreAndReport(
  flags: EvalFlags,
  plan: EvalPlan,
  quiet: boolean,
  episodes: EpisodeFileWriter | null,
): Promise<void> {
  const card = await scoreCheckpoint(flags.checkpoint!, plan.target, plan.suites, plan.protocol, quiet, episodes);

  let comparison: Comparison | undefined;
  if (plan.baseline) {
    let base: Scorecard;
    if (plan.baseline.kind === 'scorecard') {
      base = plan.baseline.card;
      if (
        base.protocol.episodes !== card.protocol.episodes ||
        base.protocol.k !== card.protocol.k ||
        base.protocol.baseSeed !== card.protocol.baseSeed
      ) {
        process.stderr.write(
          `eval: warning: the baseline scorecard used ${base.protocol.episodes} seeds from ${base.protocol.baseSeed} x ${base.protocol.k}, ` +
            `this one ${card.protocol.episodes} from ${card.protocol.baseSeed} x ${card.protocol.k}\n`,
        );
      }
    } else {
      // The baseline plays the current checkpoint's suites under the same protocol, in its own prompt format.
      base = await scoreCheckpoint(
        plan.baseline.source,
        plan.baseline.target,
        plan.suites,
        plan.protocol,
        quiet,
        episodes,
      );
    }
    // A scorecard file is named by its path and by what it scored (it may be the same checkpoint at another seed).
    const label =
      plan.baseline.kind === 'scorecard' ? `${plan.baseline.source} (scorecard of ${base.policy})` : base.policy;
    comparison = { ...compareScorecards(card, base), baseline: label };
    if (comparison.deltas.length === 0)
      throw new UsageError(`--baseline ${plan.baseline.source} shares no suite with this scorecard`);
  }

  process.stdout.write(formatScorecard(card, comparison));
  if (plan.out) {
    writeFileAtomic(plan.out, scorecardToJson(card, comparison));
    if (!quiet) process.stderr.write(`eval: wrote ${plan.out}\n`);
  }
  if (episodes) {
    episodes.commit();
    if (!quiet) process.stderr.write(`eval: wrote ${episodes.count} episodes to ${episodes.file}\n`);
  }
  if (comparison && plan.failOnRegression !== undefined) {
    const regressions = findRegressions(comparison, plan.failOnRegression);
    if (regressions.length > 0) {
      const list = regressions.map((r) => `${r.suite} (-${r.dropPoints.toFixed(1)} points)`).join(', ');
      throw new RegressionGateError(
        `success regressed by more than ${plan.failOnRegression} points against ${comparison.baseline} in: ${list}`,
      );
    }
  }
}
