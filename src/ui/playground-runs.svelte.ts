// Stored runs (IndexedDB) and imports: the run list, the newest run back on screen after a reload, opening,
// overlaying and deleting runs, and a run imported from a file (stored when it has a config, so it can resume).
// Resuming a stored run is training: playground-training's resumeStoredRun.
import { readSettingsSearch } from './settings';
import * as store from './run-store';
import type { RunContents } from './run-files';
import { guarded, messageOf, playground, showRuns, type ArmView } from './playground.svelte';
import { setSettings } from './playground-settings.svelte';

/** Reads the run list (newest first) from IndexedDB. */
export async function refreshStoredRuns(): Promise<void> {
  try {
    playground.storedRuns = await store.listRuns();
  } catch (err) {
    playground.trainingError = `could not read stored runs: ${messageOf(err)}`;
  }
}

/**
 * After a reload: the newest stored run, if it was set up by this very URL, comes back on screen (its charts, and
 * Resume on the big button when it can go on), instead of an idle page with empty charts.
 */
export async function restoreLatestRun(search: string): Promise<void> {
  await refreshStoredRuns();
  const newest = playground.storedRuns[0];
  if (
    !newest ||
    playground.arms.length > 0 ||
    newest.group !== null ||
    newest.preset === 'imported' ||
    newest.search !== search
  )
    return;
  const loaded = await store.loadRun(newest.id);
  if (playground.arms.length === 0) showRuns([viewOf(loaded)]);
}

/**
 * Shows a stored run's charts and trajectories (no training), and puts its settings in the form and the URL (the
 * backend stays: switching it would restart the worker).
 */
export function openStoredRun(runId: string): Promise<void> {
  return guarded(async () => {
    const loaded = await store.loadRun(runId);
    if (loaded.run.search || loaded.run.preset !== 'imported') {
      const reading = readSettingsSearch(loaded.run.search);
      if (reading.problems.length === 0) {
        playground.drafts = {};
        playground.fieldErrors = {};
        setSettings({ ...reading.settings, backend: playground.settings.backend });
      }
    }
    showRuns([viewOf(loaded)]);
  });
}

/**
 * Overlays stored runs on the same charts (no training): one colour each, the legend by run name. Settings stay as
 * they are (the runs may come from different setups).
 */
export function overlayStoredRuns(runIds: readonly string[]): Promise<void> {
  return guarded(async () => {
    if (runIds.length < 2) throw new Error('tick two or more runs to compare them');
    const loaded = await Promise.all(runIds.map((id) => store.loadRun(id)));
    showRuns(loaded.map((l) => ({ ...viewOf(l), arm: l.run.name })));
  });
}

function viewOf(loaded: store.LoadedRun): ArmView {
  return {
    arm: loaded.run.arm,
    runId: loaded.run.id,
    status: null,
    rows: loaded.rows,
    rollouts: loaded.rollouts,
    checkpointStep: loaded.checkpoint?.step ?? null,
    progress: null,
    halting: null,
  };
}

export function deleteStoredRun(runId: string): Promise<void> {
  return guarded(async () => {
    await store.deleteRun(runId);
    await refreshStoredRuns();
  });
}

/** Shows an imported run (archive or CLI metrics.jsonl); archives with a config are stored so they can resume. */
export function showImportedRun(name: string, contents: RunContents): Promise<void> {
  return guarded(async () => {
    let runId: string | null = null;
    if (contents.config) {
      runId = store.newRunId('imported');
      await store.saveRun({
        id: runId,
        name: `${name} (imported)`,
        createdAt: Date.now(),
        preset: 'imported',
        arm: name,
        group: null,
        search: '',
        config: contents.config,
        status: null,
      });
      for (const row of contents.rows) await store.appendMetrics(runId, row);
      const steps = [...new Set(contents.rollouts.map((r) => r.step))];
      for (const step of steps)
        await store.appendRollouts(
          runId,
          step,
          contents.rollouts.filter((r) => r.step === step),
        );
      if (contents.checkpoint) await store.saveCheckpoint({ runId, ...contents.checkpoint });
      await refreshStoredRuns();
    }
    showRuns([
      {
        arm: name,
        runId,
        status: null,
        rows: contents.rows,
        rollouts: contents.rollouts,
        checkpointStep: contents.checkpoint?.step ?? null,
        progress: null,
        halting: null,
      },
    ]);
  });
}
