// `ragen warmstart --preset NAME [--out DIR]`: rebuilds a tiny preset's warm-start checkpoint (supervised fine-tuning
// on solver demonstrations, src/warmstart/warmstart.ts), checks it by sampling validation episodes, and writes it where
// the preset loads it from (public/warmstart/<preset>/ by default).
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import path from 'node:path';
import { BACKEND_NAMES, initBackend, isBackendName, type BackendName } from '../model/backend';
import { assertCheckpointTarget, saveCheckpointDir } from '../model/checkpointDir';
import { PRESET_NAMES } from '../starpo/presets';
import {
  WARMSTART_PRESETS,
  buildWarmStart,
  checkPolicy,
  warmStartRecipeName,
  type PolicyCheck,
} from '../warmstart/warmstart';
import { REPO_ROOT } from './modelDir';
import { checkOutputDir, pruneStaleTemps } from '../node/safeWrite';
import { FLAG_LIMITS, intFlag } from './flags';
import { UsageError } from './usage';

interface WarmstartFlags {
  preset: string;
  out?: string;
  backend: string;
  steps?: string;
  checkEpisodes: string;
  check: boolean;
  force?: boolean;
}

export function registerWarmstart(program: Command): void {
  program
    .command('warmstart')
    .description("rebuild a tiny preset's warm-start checkpoint: supervised fine-tuning on solver demonstrations")
    .requiredOption('--preset <name>', `preset whose warm start to build (${WARMSTART_PRESETS.join(', ')})`)
    .option('--out <dir>', "checkpoint directory to write (default: public/<the preset's model.warmStart>)")
    .option(
      '--backend <name>',
      `tfjs backend (${BACKEND_NAMES.join(', ')}); the shipped checkpoints were built on wasm`,
      'wasm',
    )
    .option('--steps <n>', "SFT steps of the first cycle (default: the preset's recipe; later cycles keep their own)")
    .option('--check-episodes <n>', 'validation episodes sampled to check the result', '32')
    .option('--no-check', 'skip the sampled check')
    .option(
      '--force',
      'replace an existing checkpoint at --out (the shipped one by default; never one inside a training run)',
    )
    .action(async (flags: WarmstartFlags) => {
      const preset = resolvePresetName(flags.preset);
      if (!isBackendName(flags.backend)) {
        throw new UsageError(`unknown backend '${flags.backend}' (expected one of: ${BACKEND_NAMES.join(', ')})`);
      }
      const steps = intFlag(flags.steps, '--steps', 1, FLAG_LIMITS.warmstartSteps);
      const checkEpisodes = intFlag(flags.checkEpisodes, '--check-episodes', 1, FLAG_LIMITS.checkEpisodes)!;
      const out = flags.out ? path.resolve(flags.out) : path.join(REPO_ROOT, 'public', 'warmstart', preset);
      // What an interrupted save left beside --out (OUT.tmp-PID-STAMP, OUT.old-PID-STAMP: saveCheckpointDir's temp
      // names) goes once its process is gone; a checkpoint it had moved aside comes back (before the
      // checks below, which then see it).
      for (const line of pruneStaleTemps(out)) console.log(line);
      // Checked now, not after the fine-tuning: an --out that cannot take the checkpoint would waste it. An existing
      // checkpoint is replaced only with --force, one inside a training run's checkpoints/ never.
      try {
        assertCheckpointTarget(out);
        checkOutputDir('--out', out, { fresh: true, force: !!flags.force });
      } catch (err) {
        throw new UsageError(
          (err as Error).message.startsWith('--out')
            ? (err as Error).message
            : `--out ${out}: ${(err as Error).message}`,
        );
      }
      await runWarmstart({ preset, out, backend: flags.backend, steps, checkEpisodes, check: flags.check });
    });
}

function resolvePresetName(name: string): string {
  if (!(PRESET_NAMES as string[]).includes(name)) {
    throw new UsageError(`unknown preset '${name}' (presets with a warm start: ${WARMSTART_PRESETS.join(', ')})`);
  }
  try {
    return warmStartRecipeName(name);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

interface RunOptions {
  preset: string;
  out: string;
  backend: BackendName;
  steps?: number;
  checkEpisodes: number;
  check: boolean;
}

async function runWarmstart(o: RunOptions): Promise<void> {
  const started = Date.now();
  const backend = await initBackend(o.backend);
  console.log(`ragen warmstart: preset ${o.preset}, backend ${backend.name}`);
  const tty = process.stdout.isTTY === true;
  let lastLine = Date.now();
  const bar = new cliProgress.SingleBar(
    { format: '  SFT |{bar}| {value}/{total} steps | loss {loss} | eta {eta_formatted}', hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  const result = await buildWarmStart(o.preset, {
    recipe: o.steps === undefined ? {} : { steps: o.steps },
    onPhase: (phase, detail) => {
      console.log(`- ${phase}: ${detail}`);
      if (phase === 'sft' && tty) bar.start(o.steps ?? 0, 0, { loss: '-' });
    },
    onStep: (step, total, loss) => {
      if (tty) {
        if (step === 1) bar.setTotal(total);
        bar.update(step, { loss: loss.toFixed(3) });
      } else if (Date.now() - lastLine >= 30_000 || step === total) {
        // Outside a terminal (a log, CI) a line every 30 s: a long recipe builds for tens of minutes. (The bar's own
        // timer cannot do this: the SFT loop never yields to timers.)
        lastLine = Date.now();
        console.log(
          `  SFT ${step}/${total} steps, loss ${loss.toFixed(3)}, ${((lastLine - started) / 1000).toFixed(0)} s`,
        );
      }
    },
  });
  if (tty) bar.stop();
  const { model, tokenizer, config, recipe } = result;
  const d = result.demonstrations;
  console.log(
    `  demonstrations: ${d.episodes} episodes, ${d.turns} turns, demonstrator success ${pct(d.successRate)}, ` +
      `imperfect actions ${pct(d.imperfectFraction)}, distinct reasoning ${pct(d.distinctThinkFraction)}`,
  );
  console.log(
    `  model: ${model.config.num_hidden_layers} layers x ${model.config.hidden_size}, vocabulary ${tokenizer.vocabSize}; ` +
      `longest sequence ${result.maxSequenceTokens} tokens, longest response ${result.maxResponseTokens}`,
  );
  const later = result.laterCycleDemonstrations ?? [];
  for (const [i, c] of later.entries()) {
    console.log(
      `  cycle ${i + 2}: ${c.episodes} new episodes, ${c.turns} turns, demonstrator success ${pct(c.successRate)}, ` +
        `imperfect actions ${pct(c.imperfectFraction)}`,
    );
  }
  console.log(
    `  SFT: ${result.losses.length} steps in ${result.sftSeconds.toFixed(0)} s, final loss ${result.finalLoss.toFixed(3)} (mean of the last 10 % of steps)`,
  );

  const report: Record<string, unknown> = {
    preset: o.preset,
    backend: backend.name,
    recipe,
    demonstrations: d,
    ...(later.length > 0 ? { laterCycleDemonstrations: later } : {}),
    sft: {
      steps: result.losses.length,
      seconds: result.sftSeconds,
      finalLoss: result.finalLoss,
      firstLoss: result.losses[0],
    },
  };
  try {
    if (o.check) {
      // RAGEN rolls out at temperature 1 and validates at 0.5: format is checked at 1 (the harder case), success at 0.5.
      const atRollout = await checkPolicy(model, tokenizer, config, {
        temperature: config.rollout.temperature,
        seed: 1,
        episodes: o.checkEpisodes,
      });
      const atVal = await checkPolicy(model, tokenizer, config, {
        temperature: config.rollout.valTemperature,
        seed: 2,
        episodes: o.checkEpisodes,
      });
      printCheck(`temperature ${config.rollout.temperature}`, atRollout);
      printCheck(`temperature ${config.rollout.valTemperature}`, atVal);
      report.check = {
        episodes: o.checkEpisodes,
        [`t${config.rollout.temperature}`]: summary(atRollout),
        [`t${config.rollout.valTemperature}`]: summary(atVal),
      };
    }
    const provenance = new TextEncoder().encode(JSON.stringify(report, null, 2) + '\n');
    await saveCheckpointDir(o.out, model, tokenizer, { 'warmstart.json': provenance });
  } finally {
    model.dispose();
  }
  console.log(`wrote ${o.out} (${((Date.now() - started) / 1000).toFixed(0)} s in all)`);
}

function summary(c: PolicyCheck): Record<string, unknown> {
  const { trajectories: _omitted, ...rates } = c;
  return rates;
}

function printCheck(label: string, c: PolicyCheck): void {
  console.log(`  check at ${label} (${c.meanResponseTokens.toFixed(1)} tokens per response):`);
  for (const [tag, r] of Object.entries(c.perTag)) {
    console.log(
      `    ${tag.padEnd(14)} well-formed ${pct(r.formatRate)} of ${r.turns} turns, valid actions ${pct(r.validActionRate)}, ` +
        `success ${pct(r.success)} of ${r.episodes} episodes`,
    );
  }
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}
