// Runs kept in the browser's IndexedDB, so a reloaded (or closed and reopened) tab lists them and a run resumes
// from its checkpoint. One database, four stores:
//   runs         one record per run: its config, the URL settings it came from, its last known status
//   metrics      one record per (run, step): the metrics row, as a metrics.jsonl line holds it
//   rollouts     one record per (run, step): that step's sample trajectories (rollouts.jsonl records)
//   checkpoints  one record per run: the latest checkpoint's files (config.json, model.safetensors, tokenizer.json …)
import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import type { MetricRow, StoredRollout } from '../metrics/jsonl';
import type { RunConfig } from '../starpo/config';
import type { CheckpointBytes, RunStatus } from '../../workers/protocol';

export interface StoredRun {
  id: string;
  /** Shown in the run list, e.g. "bandit-tiny · 2026-05-01 10:22". */
  name: string;
  createdAt: number;
  preset: string;
  /** The preset arm ('starpo' / 'starpo-s' in classroom mode, else the preset name); 'imported' for imports. */
  arm: string;
  /** Runs trained side by side (classroom mode) share a group id. */
  group: string | null;
  /** The page query string that set the run up (a link back to its settings). */
  search: string;
  config: RunConfig | null;
  /** The last status its worker reported (a run not live on the page is not running, whatever this says). */
  status: RunStatus | null;
  /** Step of the checkpoint kept for it, if any (absent in runs stored before this field existed). */
  checkpointStep?: number | null;
}

export interface StoredCheckpoint {
  runId: string;
  step: number;
  files: CheckpointBytes;
}

interface PlaygroundDB extends DBSchema {
  runs: { key: string; value: StoredRun };
  metrics: {
    key: [string, number];
    value: { runId: string; step: number; row: MetricRow };
    indexes: { runId: string };
  };
  rollouts: {
    key: [string, number];
    value: { runId: string; step: number; records: StoredRollout[] };
    indexes: { runId: string };
  };
  checkpoints: { key: string; value: StoredCheckpoint };
}

const DB_NAME = 'ragen-playground';
const DB_VERSION = 1;

let dbPromise: Promise<IDBPDatabase<PlaygroundDB>> | null = null;

function db(): Promise<IDBPDatabase<PlaygroundDB>> {
  dbPromise ??= openDB<PlaygroundDB>(DB_NAME, DB_VERSION, {
    upgrade(database) {
      database.createObjectStore('runs', { keyPath: 'id' });
      database.createObjectStore('metrics', { keyPath: ['runId', 'step'] }).createIndex('runId', 'runId');
      database.createObjectStore('rollouts', { keyPath: ['runId', 'step'] }).createIndex('runId', 'runId');
      database.createObjectStore('checkpoints', { keyPath: 'runId' });
    },
  });
  return dbPromise;
}

/** A fresh run id: time-ordered, unique within the tab. */
export function newRunId(label: string): string {
  return `${new Date().toISOString().replace(/[:.]/g, '-')}-${label}-${Math.random().toString(36).slice(2, 7)}`;
}

export async function saveRun(run: StoredRun): Promise<void> {
  // $state proxies cannot be structured-cloned: store a plain copy.
  await (await db()).put('runs', JSON.parse(JSON.stringify(run)) as StoredRun);
}

export async function updateRunStatus(runId: string, status: RunStatus): Promise<void> {
  // One read-write transaction, so it cannot interleave with saveCheckpoint's update of the same record.
  const tx = (await db()).transaction('runs', 'readwrite');
  const run = await tx.store.get(runId);
  if (run) await tx.store.put({ ...run, status: { ...status } });
  await tx.done;
}

export async function appendMetrics(runId: string, row: MetricRow): Promise<void> {
  await (await db()).put('metrics', { runId, step: row.step, row: { ...row } });
}

export async function appendRollouts(runId: string, step: number, records: StoredRollout[]): Promise<void> {
  await (await db()).put('rollouts', { runId, step, records: JSON.parse(JSON.stringify(records)) as StoredRollout[] });
}

export async function saveCheckpoint(checkpoint: StoredCheckpoint): Promise<void> {
  const d = await db();
  const tx = d.transaction(['checkpoints', 'runs'], 'readwrite');
  const runs = tx.objectStore('runs');
  const run = await runs.get(checkpoint.runId);
  await tx.objectStore('checkpoints').put(checkpoint);
  if (run) await runs.put({ ...run, checkpointStep: checkpoint.step });
  await tx.done;
}

/** Every stored run, newest first; `checkpointStep` is null for runs without a checkpoint. */
export async function listRuns(): Promise<StoredRun[]> {
  const d = await db();
  const runs = await d.getAll('runs');
  const withCheckpoint = new Set(await d.getAllKeys('checkpoints'));
  return runs
    .map((r) => ({
      ...r,
      checkpointStep: withCheckpoint.has(r.id) ? (r.checkpointStep ?? r.status?.step ?? null) : null,
    }))
    .sort((a, b) => b.createdAt - a.createdAt);
}

export interface LoadedRun {
  run: StoredRun;
  rows: MetricRow[];
  rollouts: StoredRollout[];
  checkpoint: StoredCheckpoint | null;
}

export async function loadRun(runId: string): Promise<LoadedRun> {
  const d = await db();
  const run = await d.get('runs', runId);
  if (!run) throw new Error(`no stored run '${runId}'`);
  const metrics = await d.getAllFromIndex('metrics', 'runId', runId);
  const rollouts = await d.getAllFromIndex('rollouts', 'runId', runId);
  return {
    run,
    rows: metrics.sort((a, b) => a.step - b.step).map((m) => m.row),
    rollouts: rollouts.sort((a, b) => a.step - b.step).flatMap((r) => r.records),
    checkpoint: (await d.get('checkpoints', runId)) ?? null,
  };
}

/** Drops metrics and rollouts after `step`: a run resumed from the checkpoint of `step` re-does those steps. */
export async function truncateAfter(runId: string, step: number): Promise<void> {
  const d = await db();
  const range = IDBKeyRange.bound([runId, step + 1], [runId, Number.MAX_SAFE_INTEGER]);
  const tx = d.transaction(['metrics', 'rollouts'], 'readwrite');
  await Promise.all([tx.objectStore('metrics').delete(range), tx.objectStore('rollouts').delete(range), tx.done]);
}

export async function deleteRun(runId: string): Promise<void> {
  const d = await db();
  const range = IDBKeyRange.bound([runId, 0], [runId, Number.MAX_SAFE_INTEGER]);
  const tx = d.transaction(['runs', 'metrics', 'rollouts', 'checkpoints'], 'readwrite');
  await Promise.all([
    tx.objectStore('runs').delete(runId),
    tx.objectStore('metrics').delete(range),
    tx.objectStore('rollouts').delete(range),
    tx.objectStore('checkpoints').delete(runId),
    tx.done,
  ]);
}
