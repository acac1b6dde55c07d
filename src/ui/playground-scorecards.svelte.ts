// Scorecards, computed in a worker: of the current policy (the first live arm's, or the warm start a run of the
// current settings starts from) or of a stored run's checkpoint; and a custom board played by the current policy.
import * as Comlink from 'comlink';
import type { TrainerClient } from './trainer-client';
import * as store from './run-store';
import type { RolloutRecord, ScorecardProgress, ScorecardSource } from '../../workers/protocol';
import { guarded, messageOf, playground } from './playground.svelte';
import { answer, armClients, firstLiveClient, firstWorker } from './playground-workers.svelte';
import { createRuns } from './playground-training.svelte';

/** Asks the worker for a scorecard of `source`, keeping progress and the result (or the error) in the state. */
async function computeScorecard(
  pick: () => Promise<{ client: TrainerClient; source: ScorecardSource }>,
): Promise<void> {
  if (playground.scoring) return;
  playground.scoring = true;
  playground.scorecardError = null;
  playground.scorecardProgress = null;
  try {
    const { client: c, source } = await pick();
    const onProgress = (p: ScorecardProgress) => {
      playground.scorecardProgress = p;
    };
    playground.scorecard = await c.api.scorecard(source, { ...playground.scorecardRequest }, Comlink.proxy(onProgress));
  } catch (err) {
    playground.scorecardError = messageOf(err);
  } finally {
    playground.scoring = false;
    playground.scorecardProgress = null;
  }
}

/**
 * Scores the current policy: the first live arm's weights (pause it first), or, before any run, the policy a run of
 * the current settings starts from (the run is built as Step would build it: from the warm start).
 */
export function scoreCurrentPolicy(): Promise<void> {
  return computeScorecard(async () => ({ client: await currentPolicyClient(), source: 'current' }));
}

/**
 * The worker holding the current policy: the first live arm's, or, before any run, a run of the current settings
 * built as Step would build it (from the preset's warm start, no step taken).
 */
async function currentPolicyClient(): Promise<TrainerClient> {
  if (playground.phase !== 'ready') throw new Error('the trainer worker is not ready yet');
  if (playground.running) throw new Error('pause the run first: the policy is being trained');
  const liveArm = playground.arms.find(
    (a) => a.status !== null && a.status.phase !== 'failed' && armClients.has(a.arm),
  );
  if (!liveArm) {
    await guarded(() => createRuns());
    if (playground.trainingError) throw new Error(playground.trainingError);
  }
  const c = firstLiveClient();
  if (!c) throw new Error('no live run holds a policy');
  return c;
}

/**
 * Plays a custom board (`{ level }` / `{ map }` for `tag`) with the current policy, in the run's own agent format
 * (workers/trainer.worker.ts playEpisode); before any run, with the preset's warm start.
 */
export async function playCustomBoard(tag: string, board: Record<string, unknown>): Promise<RolloutRecord> {
  const c = await currentPolicyClient();
  return answer(c, c.api.playEpisode(tag, board));
}

/** Scores a stored run's latest checkpoint, in the first worker, with the config of the run it came from. */
export function scoreStoredRun(runId: string): Promise<void> {
  return computeScorecard(async () => {
    if (!firstWorker() || playground.phase !== 'ready') throw new Error('the trainer worker is not ready yet');
    const loaded = await store.loadRun(runId);
    if (!loaded.run.config)
      throw new Error(`run '${loaded.run.name}' has no config: cannot tell which suites to score it on`);
    if (!loaded.checkpoint)
      throw new Error(
        `run '${loaded.run.name}' has no stored checkpoint yet (one is kept at every pause, stop and end)`,
      );
    const name = `${loaded.run.name} (checkpoint of step ${loaded.checkpoint.step})`;
    return { client: firstWorker()!, source: { files: loaded.checkpoint.files, config: loaded.run.config, name } };
  });
}
