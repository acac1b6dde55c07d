// `ragen import-metrics FILE [--out DIR] [--ragen-config FILE]`: a RAGEN run's logged metrics (a W&B history
// export, JSON or CSV; src/interop/wandbHistory.ts) become a run directory like `ragen train` writes: metrics.jsonl
// (RAGEN's keys, one row per step), config.json when the RAGEN config is given (read back through the same table
// `ragen export` writes with, src/interop/ragenMapping.ts), and import.json saying what was renamed or left out.
// The playground imports the metrics.jsonl (or the export itself), and the experiments' plots read the directory
// beside local runs. Bad input exits 2 before anything is written; a directory that holds a run is never touched,
// an existing non-empty --out only with --force, and the directory is written atomically (src/node/safeWrite.ts).
import type { Command } from 'commander';
import * as fs from 'node:fs';
import * as path from 'node:path';
import YAML from 'yaml';
import { encodeJsonLine } from '../metrics/jsonl';
import { parseWandbHistory, type ImportedHistory } from '../interop/wandbHistory';
import { ConfigError, parseRunConfig, type RunConfig } from '../starpo/config';
import { fromRagen, unwrapWandbConfig } from '../interop/ragenMapping';
import { checkOutputDir, writeDirAtomic } from '../node/safeWrite';
import { UsageError } from './usage';

interface ImportFlags {
  out?: string;
  ragenConfig?: string;
  quiet?: boolean;
  force?: boolean;
}

export function registerImportMetrics(program: Command): void {
  program
    .command('import-metrics')
    .description(
      "turn a RAGEN run's W&B history export (JSON or CSV) into a run directory the playground and the experiments' plots read",
    )
    .argument('<file>', 'the W&B history export (.csv, .json or .jsonl)')
    .option('--out <dir>', 'run directory to write (default runs/<file name>)')
    .option(
      '--ragen-config <file>',
      "the RAGEN run's config (Hydra's .hydra/config.yaml, W&B's config.yaml, or an export's ragen_export.yaml): also writes config.json",
    )
    .option('--force', "replace an existing non-empty --out directory (never a training run's)")
    .option('--quiet', 'no summary on stderr')
    .action((file: string, flags: ImportFlags) => {
      runImportMetrics(file, flags);
    });
}

function readRagenConfig(file: string): { config: RunConfig; notImported: string[] } {
  if (!fs.existsSync(file)) throw new UsageError(`--ragen-config ${file}: no such file`);
  let raw: unknown;
  try {
    raw = YAML.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--ragen-config ${file}: not YAML or JSON (${(err as Error).message})`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new UsageError(`--ragen-config ${file}: expected a mapping of config keys`);
  const { config, notImported } = fromRagen(unwrapWandbConfig(raw as Record<string, unknown>));
  try {
    return { config: parseRunConfig(config, `RAGEN config ${file}`), notImported };
  } catch (err) {
    const extra = notImported.length ? ` (not imported: ${notImported.join('; ')})` : '';
    throw new UsageError(`${err instanceof ConfigError ? err.message : (err as Error).message}${extra}`);
  }
}

export function runImportMetrics(file: string, flags: ImportFlags): void {
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) throw new UsageError(`${file}: no such file`);
  const out = path.resolve(flags.out ?? path.join('runs', path.basename(file).replace(/\.[^.]+$/, '')));
  try {
    checkOutputDir('--out', flags.out ?? out, { fresh: true, force: !!flags.force });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}`);
  }
  let history: ImportedHistory;
  try {
    history = parseWandbHistory(file, fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const ragen = flags.ragenConfig ? readRagenConfig(flags.ragenConfig) : null;
  const report = {
    source: path.resolve(file),
    ragenConfig: flags.ragenConfig ? path.resolve(flags.ragenConfig) : null,
    stepColumn: history.stepColumn,
    steps: history.rows.length,
    renamed: history.renamed,
    notImported: {
      ...history.dropped,
      ...Object.fromEntries((ragen?.notImported ?? []).map((line) => [line.split(':')[0], line])),
    },
    changed: history.notes,
  };
  writeDirAtomic(out, {
    'metrics.jsonl': history.rows.map((r) => encodeJsonLine(r) + '\n').join(''),
    ...(ragen ? { 'config.json': JSON.stringify(ragen.config, null, 2) + '\n' } : {}),
    'import.json': JSON.stringify(report, null, 2) + '\n',
  });

  if (!flags.quiet) {
    const keys = new Set(history.rows.flatMap((r) => Object.keys(r)));
    const first = history.rows[0].step;
    const last = history.rows[history.rows.length - 1].step;
    process.stderr.write(
      `import-metrics: ${history.rows.length} steps (${first} to ${last}), ${keys.size - 1} metric keys -> ${out}\n`,
    );
    for (const [from, to] of Object.entries(history.renamed))
      process.stderr.write(`import-metrics: renamed ${from} -> ${to}\n`);
    for (const [column, why] of Object.entries(history.dropped))
      process.stderr.write(`import-metrics: left out ${column}: ${why}\n`);
    for (const [column, why] of Object.entries(history.notes))
      process.stderr.write(`import-metrics: note: ${column}: ${why}\n`);
    for (const line of ragen?.notImported ?? [])
      process.stderr.write(`import-metrics: config: not imported: ${line}\n`);
  }
  process.stdout.write(`${out}\n`);
}
