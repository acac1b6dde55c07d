// The trainer workers: the first one (it runs the backend self-check and the first, or only, arm) and one more per
// further arm in classroom mode. Starting them, calling them (a call to a dead worker fails instead of waiting
// forever), and what happens to their arms when one dies.
import { startTrainerWorker, type TrainerClient } from './trainer-client';
import * as store from './run-store';
import { MATMUL_CHECK_SIZE, MATMUL_TOLERANCE, type BackendChoice } from '../../workers/protocol';
import { messageOf, playground, type ArmView } from './playground.svelte';
import { clearField, setSettings } from './playground-settings.svelte';
import { refreshStoredRuns } from './playground-runs.svelte';

/** The first worker: it runs the backend self-check and the first (or only) arm. */
let client: TrainerClient | null = null;
/** Workers of the live arms, by arm name (the first arm uses `client`). */
export const armClients = new Map<string, TrainerClient>();

/** The first worker, or null before it has started. */
export function firstWorker(): TrainerClient | null {
  return client;
}

/** Starts the worker with the requested backend and runs the matmul self-check. Errors end up in `playground.error`. */
export async function connect(requested: BackendChoice): Promise<void> {
  client?.terminate();
  for (const [, c] of armClients) if (c !== client) c.terminate();
  armClients.clear();
  await startFirstWorker(requested);
}

/** (Re)starts only the first worker; live arms in other workers are left alone. */
export async function startFirstWorker(requested: BackendChoice): Promise<void> {
  client = startTrainerWorker();
  watchForCrash(client);
  playground.requested = requested;
  playground.phase = 'starting';
  playground.backend = null;
  playground.matmul = null;
  playground.error = null;
  try {
    playground.backend = await answer(client, client.api.init(requested));
    playground.phase = 'checking';
    playground.matmul = await answer(client, client.api.matmulCheck(MATMUL_CHECK_SIZE));
    playground.phase = playground.matmulPassed ? 'ready' : 'failed';
    if (!playground.matmulPassed) {
      playground.error =
        `the ${playground.matmul.backend} backend computed a wrong matmul ` +
        `(max abs error ${playground.matmul.maxAbsError} > ${MATMUL_TOLERANCE})`;
    }
  } catch (err) {
    playground.phase = 'failed';
    playground.error = messageOf(err);
  }
}

/** A call to a worker, or its crash: a dead worker never answers, so nothing waits on it forever. */
export function answer<T>(c: TrainerClient, call: Promise<T>): Promise<T> {
  return Promise.race([call, c.crashed]);
}

/** Records an error found before the worker could start (e.g. a bad URL parameter). */
export function fail(message: string): void {
  playground.phase = 'failed';
  playground.error = message;
}

/** Switches the tfjs backend: the worker is restarted on it (only while no run is live). */
export function setBackendChoice(backend: BackendChoice): Promise<void> {
  clearField('backend');
  setSettings({ ...playground.settings, backend });
  playground.arms = playground.arms.filter((a) => a.status === null); // runs of the old worker cannot go on
  return connect(backend);
}

/** The page's base URL: the warm-start checkpoint under public/ is fetched relative to it (any sub-path works). */
export function siteBase(): string {
  return typeof document !== 'undefined' ? document.baseURI : '/';
}

/** The worker for the arm at `index`: the first worker for the first arm, one of its own for each further arm. */
export async function clientFor(arm: string, index: number): Promise<TrainerClient> {
  if (index === 0) {
    if (!client) throw new Error('the trainer worker has not started');
    return client;
  }
  // Classroom mode: each further arm trains in its own worker on the same backend.
  let c = armClients.get(arm);
  if (!c) {
    c = startTrainerWorker();
    watchForCrash(c);
    await answer(c, c.api.init(playground.backend?.name ?? playground.requested));
  }
  return c;
}

/** Ends an arm as failed with `message` (the `run-status` says failed; the stored run too). */
export async function markFailed(view: ArmView, message: string): Promise<void> {
  view.status = { phase: 'failed', step: view.status?.step ?? 0, totalSteps: view.status?.totalSteps ?? 0, message };
  view.progress = null;
  view.halting = null;
  if (view.runId) await store.updateRunStatus(view.runId, $state.snapshot(view.status)).catch(() => undefined);
  void refreshStoredRuns();
}

/** Clients already watched for a crash. */
const watched = new WeakSet<TrainerClient>();

/**
 * When a worker dies, every arm it trained ends as failed with the reason, and the first worker comes back up, so
 * the page stays usable (a dead worker would otherwise leave the status at 'running' and its calls unanswered).
 */
export function watchForCrash(c: TrainerClient): void {
  if (watched.has(c)) return;
  watched.add(c);
  c.crashed.catch(async (err) => {
    const message = messageOf(err);
    for (const [arm, owner] of [...armClients]) {
      if (owner !== c) continue;
      armClients.delete(arm);
      const view = playground.arms.find((a) => a.arm === arm);
      if (view && view.status && !['done', 'stopped', 'failed'].includes(view.status.phase))
        await markFailed(view, message);
    }
    playground.trainingError = message;
    // A worker that dies while starting up is reported by startFirstWorker itself (restarting it would loop).
    if (c === client && playground.phase === 'ready') await startFirstWorker(playground.requested);
  });
}

export function liveClients(): TrainerClient[] {
  return playground.arms.map((a) => armClients.get(a.arm)).filter((c): c is TrainerClient => c !== undefined);
}

/** The worker of the first live arm (custom boards are played by its current policy). */
export function firstLiveClient(): TrainerClient | null {
  return liveClients()[0] ?? null;
}
