// Export and import of runs as files. An exported run is a tar archive laid out exactly like the CLI's run
// directory (docs/architecture.md): config.json, metrics.jsonl, rollouts.jsonl, checkpoints/step-N/{config.json,
// model.safetensors, tokenizer.json, ...}. Import takes such an archive back, a bare metrics.jsonl written by the
// headless CLI, or a RAGEN run's W&B history export (.csv / .json / wandb-history.jsonl; charts only, see
// src/interop/wandbHistory.ts). Pure TypeScript.
import {
  encodeJsonLine,
  parseMetricsJsonl,
  parseRolloutsJsonl,
  type MetricRow,
  type StoredRollout,
} from '../metrics/jsonl';
import { parseWandbHistory } from '../interop/wandbHistory';
import { parseRunConfig, type RunConfig } from '../starpo/config';
import { indexSafetensors } from '../model/safetensors';
import type { CheckpointBytes } from '../../workers/protocol';
import { readTar, writeTar } from './tar';

export interface RunContents {
  config: RunConfig | null;
  rows: MetricRow[];
  rollouts: StoredRollout[];
  checkpoint: { step: number; files: CheckpointBytes } | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const jsonl = (records: readonly ({ step: number } & Record<string, unknown>)[]) =>
  encoder.encode(records.map((r) => encodeJsonLine(r) + '\n').join(''));

/** The tar archive of a run, in the CLI's run-directory layout. */
export function exportRunArchive(run: RunContents): Uint8Array {
  const files: { path: string; bytes: Uint8Array }[] = [];
  if (run.config)
    files.push({ path: 'config.json', bytes: encoder.encode(JSON.stringify(run.config, null, 2) + '\n') });
  files.push({ path: 'metrics.jsonl', bytes: jsonl(run.rows) });
  files.push({ path: 'rollouts.jsonl', bytes: jsonl(run.rollouts) });
  if (run.checkpoint) {
    for (const [name, bytes] of Object.entries(run.checkpoint.files)) {
      files.push({ path: `checkpoints/step-${run.checkpoint.step}/${name}`, bytes });
    }
  }
  return writeTar(files);
}

/**
 * Reads an imported file: a run archive (.tar) or a metrics.jsonl. Errors name the file and the problem (a
 * metrics line that is not JSON, an archive without metrics.jsonl, an invalid config.json).
 */
export function importRunFile(fileName: string, bytes: Uint8Array): RunContents {
  const charts = (rows: MetricRow[]): RunContents => ({ config: null, rows, rollouts: [], checkpoint: null });
  if (/\.jsonl$/i.test(fileName)) {
    const text = decoder.decode(bytes);
    // W&B's wandb-history.jsonl counts steps in `_step`; our metrics.jsonl in `step`.
    return charts(
      /^\s*\{[^\n]*"_step"/.test(text) && !/^\s*\{"step"/.test(text)
        ? parseWandbHistory(fileName, text).rows
        : parseMetricsJsonl(text, fileName),
    );
  }
  if (/\.(csv|json)$/i.test(fileName)) return charts(parseWandbHistory(fileName, decoder.decode(bytes)).rows);
  if (!/\.tar$/i.test(fileName)) {
    throw new Error(
      `cannot import '${fileName}': expected a run archive (.tar), a metrics.jsonl, or a RAGEN W&B history export (.csv, .json)`,
    );
  }
  const entries = readTar(bytes);
  // An archive made with `tar -cf run.tar runs/abc` has every path under one top folder: strip it.
  const paths = [...entries.keys()];
  const metricsPath = paths.find((p) => p === 'metrics.jsonl' || p.endsWith('/metrics.jsonl'));
  if (!metricsPath) throw new Error(`cannot import '${fileName}': the archive has no metrics.jsonl`);
  const root = metricsPath.slice(0, metricsPath.length - 'metrics.jsonl'.length);
  const at = (p: string) => entries.get(root + p);

  const rows = parseMetricsJsonl(decoder.decode(at('metrics.jsonl')!), `${fileName}: metrics.jsonl`);
  const rolloutBytes = at('rollouts.jsonl');
  const rollouts = rolloutBytes ? parseRolloutsJsonl(decoder.decode(rolloutBytes), `${fileName}: rollouts.jsonl`) : [];
  const configBytes = at('config.json');
  let config: RunConfig | null = null;
  if (configBytes) {
    let raw: unknown;
    try {
      raw = JSON.parse(decoder.decode(configBytes));
    } catch (err) {
      throw new Error(`${fileName}: config.json is not valid JSON (${(err as Error).message})`, { cause: err });
    }
    config = parseRunConfig(raw, `${fileName}: config.json`);
  }

  return { config, rows, rollouts, checkpoint: latestCheckpoint(fileName, root, entries) };
}

/** What a checkpoint needs to be resumed and scored (trainer_state.json also marks a complete one, as in the CLI). */
const REQUIRED_CHECKPOINT_FILES = ['config.json', 'model.safetensors', 'tokenizer.json', 'trainer_state.json'];

/**
 * The newest complete checkpoint of the archive (a step-N folder with trainer_state.json, as the CLI's --resume
 * counts them; a newer folder without it is passed over), with every file checked: the
 * required files present, each .json parseable, each .safetensors intact. Null when the archive has no step folder.
 */
function latestCheckpoint(fileName: string, root: string, entries: Map<string, Uint8Array>): RunContents['checkpoint'] {
  const folders = new Map<number, CheckpointBytes>();
  const pattern = new RegExp(`^${root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}checkpoints/step-(\\d+)/(.+)$`);
  for (const [path, bytes] of entries) {
    const m = pattern.exec(path);
    if (!m) continue;
    const step = Number(m[1]);
    if (!folders.has(step)) folders.set(step, {});
    folders.get(step)![m[2]] = bytes;
  }
  if (folders.size === 0) return null;
  const steps = [...folders.keys()].sort((a, b) => b - a);
  const complete = steps.find((step) => folders.get(step)!['trainer_state.json'] !== undefined);
  const step = complete ?? steps[0];
  const files = folders.get(step)!;
  const where = `${fileName}: checkpoints/step-${step}`;
  const missing = REQUIRED_CHECKPOINT_FILES.filter((name) => files[name] === undefined);
  if (missing.length > 0) throw new Error(`${where} is incomplete: it has no ${missing.join(', ')}`);
  for (const [name, bytes] of Object.entries(files)) {
    if (name.endsWith('.json')) {
      try {
        JSON.parse(decoder.decode(bytes));
      } catch (err) {
        throw new Error(`${where}/${name} is not valid JSON (${(err as Error).message})`, { cause: err });
      }
    } else if (name.endsWith('.safetensors')) {
      try {
        indexSafetensors(bytes);
      } catch (err) {
        throw new Error(`${where}/${name} is damaged: ${(err as Error).message}`, { cause: err });
      }
    }
  }
  return { step, files };
}
