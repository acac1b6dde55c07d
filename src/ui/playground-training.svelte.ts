// Training from the page: the transport bar's actions (start or resume, new run, pause, one step, stop) on every
// arm on screen, the runs they build in the workers, and what streams back from each worker (metrics rows, sample
// trajectories, status, checkpoints), kept on screen and in IndexedDB.
import * as Comlink from 'comlink';
import type { TrainerClient } from './trainer-client';
import { presetArms, runConfigFor } from './settings';
import * as store from './run-store';
import type { CheckpointBytes, MetricRow, StoredRollout, TrainingListener } from '../../workers/protocol';
import { guarded, messageOf, playground, type ArmView } from './playground.svelte';
import {
  answer,
  armClients,
  clientFor,
  firstWorker,
  liveClients,
  markFailed,
  siteBase,
  startFirstWorker,
  watchForCrash,
} from './playground-workers.svelte';
import { refreshStoredRuns } from './playground-runs.svelte';

/** Adds a metrics row to an arm (a repeated or older step replaces what is there: a resumed run re-does steps). */
export function recordMetrics(view: ArmView, row: MetricRow): void {
  const i = view.rows.findIndex((r) => r.step >= row.step);
  if (i === -1) view.rows.push(row);
  else view.rows.splice(i, view.rows.length - i, row);
}

/** Adds a step's sample trajectories to an arm (replacing any earlier records of that step). */
export function recordRollouts(view: ArmView, step: number, records: StoredRollout[]): void {
  const kept = view.rollouts.filter((r) => r.step < step);
  view.rollouts = [...kept, ...records];
}

/** Checkpoints still being written to IndexedDB: a resume waits for them, so it finds the latest. */
let saving: Promise<unknown> = Promise.resolve();
function track(write: Promise<unknown>): void {
  saving = Promise.all([saving, write.catch(() => undefined)]);
}

function listenerFor(view: ArmView): TrainingListener {
  return {
    metrics(row) {
      recordMetrics(view, row);
      if (view.runId) void store.appendMetrics(view.runId, row);
    },
    rollouts(step, records) {
      recordRollouts(view, step, records);
      if (view.runId) void store.appendRollouts(view.runId, step, records);
    },
    status(status) {
      view.status = status;
      if (status.phase !== 'running' && status.phase !== 'loading') view.progress = null;
      if (status.phase === 'failed') playground.trainingError = `${view.arm}: ${status.message ?? 'training failed'}`;
      if (view.runId) {
        const saved = store.updateRunStatus(view.runId, status);
        // The run list shows each run's phase and step: refresh it when a run settles.
        if (status.phase !== 'running') void saved.then(refreshStoredRuns);
      }
    },
    checkpoint(step, files: CheckpointBytes) {
      view.checkpointStep = step;
      if (view.runId) track(store.saveCheckpoint({ runId: view.runId, step, files }));
    },
    progress(progress) {
      view.progress = progress;
    },
  };
}

/**
 * Builds one run per arm of the current settings in the worker(s), optionally resuming each from a stored
 * checkpoint. The views are put on screen first, so the UI shows 'loading' while the warm start is fetched.
 */
export async function createRuns(resume?: {
  run: store.StoredRun;
  checkpoint: store.StoredCheckpoint | null;
  rows: MetricRow[];
  rollouts: StoredRollout[];
}): Promise<void> {
  const settings = playground.settings;
  const arms = resume ? [resume.run.arm] : presetArms(settings.preset);
  const configs = resume ? [resume.run.config!] : arms.map((arm) => runConfigFor(settings, arm));
  const group = arms.length > 1 ? store.newRunId('classroom') : null;
  const views: ArmView[] = arms.map((arm, i) => ({
    arm,
    runId: resume ? resume.run.id : store.newRunId(arm),
    status: {
      phase: 'loading',
      step: resume?.checkpoint?.step ?? 0,
      totalSteps: configs[i].trainer.totalSteps,
      message: null,
    },
    rows: resume ? resume.rows.filter((r) => r.step <= (resume.checkpoint?.step ?? 0)) : [],
    rollouts: resume ? resume.rollouts.filter((r) => r.step <= (resume.checkpoint?.step ?? 0)) : [],
    checkpointStep: resume?.checkpoint?.step ?? null,
    progress: null,
    halting: null,
  }));
  playground.lesson = null;
  playground.arms = views;
  const live = playground.arms; // the $state proxies: updates through them reach the UI
  const search = typeof window !== 'undefined' ? window.location.search : '';
  await Promise.all(
    live.map(async (view, i) => {
      if (resume) {
        if (resume.checkpoint) await store.truncateAfter(view.runId!, resume.checkpoint.step);
      } else {
        const date = new Date().toLocaleString();
        await store.saveRun({
          id: view.runId!,
          name: `${settings.preset}${arms.length > 1 ? ` · ${view.arm}` : ''} · ${date}`,
          createdAt: Date.now(),
          preset: settings.preset,
          arm: view.arm,
          group,
          search,
          config: configs[i],
          status: view.status,
        });
      }
      try {
        const c = await clientFor(view.arm, i);
        armClients.set(view.arm, c);
        watchForCrash(c);
        const status = await answer(
          c,
          c.api.createRun(
            {
              config: configs[i],
              siteBase: siteBase(),
              resume: resume?.checkpoint ? { step: resume.checkpoint.step, files: resume.checkpoint.files } : undefined,
              workers: settings.workers,
              runs: arms.length,
            },
            Comlink.proxy(listenerFor(view)),
          ),
        );
        view.status = status;
      } catch (err) {
        // The run could not be built (no context room, a warm start that would not load, a crashed worker): the arm
        // ends as failed with the reason, so Start, the setup and the run list work again.
        await markFailed(view, messageOf(err));
        throw new Error(arms.length > 1 ? `${view.arm}: ${messageOf(err)}` : messageOf(err), { cause: err });
      }
    }),
  );
  void refreshStoredRuns();
}

/**
 * The big button: resumes a paused run in its worker, or a stopped / reloaded run from its stored checkpoint, and
 * otherwise builds the run(s) from the settings and plays every arm.
 */
export function startTraining(): Promise<void> {
  if (!playground.resumable && playground.resumeRunId !== null) return resumeStoredRun(playground.resumeRunId);
  return guarded(async () => {
    if (!playground.resumable) await createRuns();
    await Promise.all(liveClients().map((c) => answer(c, c.api.play())));
  });
}

/** "New run": a fresh run from the settings (from the warm start), whatever is on screen. */
export function startNewRun(): Promise<void> {
  return guarded(async () => {
    const ended = await Promise.all(playground.arms.map((view) => stopArm(view)));
    if (ended.some((c) => c === firstWorker())) await startFirstWorker(playground.requested);
    await createRuns();
    await Promise.all(liveClients().map((c) => answer(c, c.api.play())));
  });
}

/** Pauses every arm: within a fraction of a second while a step is still rolling out, else after its update. */
export function pauseTraining(): Promise<void> {
  return guarded(async () => {
    await Promise.all(
      playground.arms.map(async (view) => {
        const c = armClients.get(view.arm);
        if (!c) return;
        view.halting = 'pause';
        try {
          await answer(c, c.api.pause());
        } finally {
          view.halting = null;
        }
      }),
    );
  });
}

/** One training step on every arm (building the runs first if needed). */
export function stepOnce(): Promise<void> {
  return guarded(async () => {
    if (!playground.resumable) await createRuns();
    await Promise.all(liveClients().map((c) => answer(c, c.api.stepOnce())));
  });
}

/**
 * How long Stop waits for a worker to stop by itself. A step still rolling out or scoring stops within a fraction
 * of a second; one in its update (seconds of kernels that do not look at messages) is ended after this.
 */
const STOP_GRACE_MS = 2000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Stops every arm within about STOP_GRACE_MS. A worker that does not answer in time is ended (terminated): its step
 * in flight is lost, never a checkpoint (the page keeps the one of the last completed step). The run stays stored
 * and can be resumed from that checkpoint in a new session.
 */
export function stopTraining(): Promise<void> {
  return guarded(async () => {
    const ended = await Promise.all(playground.arms.map((view) => stopArm(view)));
    if (ended.some((c) => c === firstWorker())) await startFirstWorker(playground.requested);
  });
}

/** Stops one arm; returns the client if its worker had to be ended. */
async function stopArm(view: ArmView): Promise<TrainerClient | null> {
  const c = armClients.get(view.arm);
  const phase = view.status?.phase;
  if (!c || !phase || phase === 'stopped' || phase === 'done' || phase === 'failed') return null;
  view.halting = 'stop';
  try {
    const answered = await Promise.race([
      c.api.stop().then(
        () => true,
        () => true,
      ),
      sleep(STOP_GRACE_MS).then(() => false),
    ]);
    if (answered) return null;
    c.terminate();
    armClients.delete(view.arm);
    const done = view.status?.step ?? 0;
    const checkpoint = view.checkpointStep;
    view.status = {
      phase: 'stopped',
      step: done,
      totalSteps: view.status?.totalSteps ?? done,
      message:
        `stopped during step ${done + 1}, whose update was still running (it was dropped); ` +
        (checkpoint !== null
          ? `resume continues from the checkpoint of step ${checkpoint}`
          : 'no checkpoint was kept yet'),
    };
    view.progress = null;
    if (view.runId) await store.updateRunStatus(view.runId, $state.snapshot(view.status));
    void refreshStoredRuns();
    return c;
  } finally {
    view.halting = null;
  }
}

/** Continues a stored run from its latest checkpoint, in the worker. */
export function resumeStoredRun(runId: string): Promise<void> {
  return guarded(async () => {
    await saving;
    const loaded = await store.loadRun(runId);
    if (!loaded.run.config) throw new Error(`run '${loaded.run.name}' has no config to resume from`);
    if (!loaded.checkpoint) throw new Error(`run '${loaded.run.name}' has no checkpoint yet: start a new run instead`);
    const total = loaded.run.config.trainer.totalSteps;
    if (loaded.checkpoint.step >= total)
      throw new Error(`run '${loaded.run.name}' is finished (${total} of ${total} steps): nothing to resume`);
    await createRuns({ run: loaded.run, checkpoint: loaded.checkpoint, rows: loaded.rows, rollouts: loaded.rollouts });
    await Promise.all(liveClients().map((c) => answer(c, c.api.play())));
  });
}
