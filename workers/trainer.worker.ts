// The trainer worker: every tfjs computation of the browser playground runs here, never on the page's main thread,
// so the page stays responsive while a step runs. It starts a backend (and self-checks it), then builds the SAME
// Trainer the Node CLI uses from the RunConfig the page sends; metrics and sample rollouts go back through a
// CallbackSink whose callbacks are a Comlink proxy of the page's listener. Nothing about training is written here.
import * as Comlink from 'comlink';
import { initBackend } from '../src/model/backend';
import { toRolloutRecord } from '../src/metrics/rolloutRecord';
import { CallbackSink } from '../src/metrics/sink';
import { EnvGroupManager, assertDialoguesFit, envRegistry, runRollouts } from '../src/agent/index';
import { customBoardBlock, customBoardEnvGroups } from '../src/starpo/config';
import { assertRunFitsContext } from '../src/starpo/contextFit';
import { Trainer } from '../src/starpo/trainer';
import { mixSeed } from '../src/model/seeded';
import { policyGenerateFn } from '../src/starpo/policyAgent';
import { loadPolicyFiles } from '../src/model/modelFiles';
import type { Tokenizer } from '../src/model/tokenizer';
import { agentFormatFromConfig, scoreModel, type ScorecardProgress } from '../src/eval/index';
import { runMatmulCheck } from './matmul-check';
import { fetchCheckpoint, freshTinyPolicy } from './initial-policy';
import { RunController, type Steppable } from './run-controller';
import { ProgressRelay } from './progress-relay';
import { wasmPaths } from './wasm-paths';
import { spawnHelperWorker, type HelperWorker } from './helper-client';
import { helpersFor } from '../src/starpo/workers';
import type {
  BackendChoice,
  CheckpointBytes,
  CreateRunOptions,
  RunStatus,
  ScorecardRequest,
  ScorecardSource,
  TrainerWorkerApi,
  TrainingListener,
} from './protocol';
const log = (line: string) => console.info(`[trainer worker] ${line}`);

/** The Trainer as the run controller drives it: one step per call, with a checkpoint after every step. */
class TrainerRun implements Steppable {
  private lastCheckpointStep = -1;
  constructor(
    readonly trainer: Trainer,
    private readonly listener: TrainingListener,
    private readonly progress: ProgressRelay,
    /** Whether the page wants checkpoints (CreateRunOptions.checkpoints). */
    private readonly checkpoints: boolean,
  ) {}
  get stepsDone(): number {
    return this.trainer.stepsDone;
  }
  /** Early stopping ends the run where it stopped. */
  get totalSteps(): number {
    return this.trainer.stoppedBy !== null ? this.trainer.stepsDone : this.trainer.config.trainer.totalSteps;
  }
  async step(): Promise<void> {
    try {
      await this.trainer.step();
    } finally {
      this.progress.clear();
    }
    // Every step (not every trainer.saveFreq steps as on disk): the page keeps only the latest checkpoint, and a Stop
    // that has to end a worker busy in its update must find the last completed step there.
    await this.sendCheckpoint();
  }
  /** Sends the current checkpoint to the page (at a step boundary; skipped when this step's was already sent). */
  async sendCheckpoint(): Promise<void> {
    const step = this.trainer.stepsDone;
    if (!this.checkpoints || step === 0 || step === this.lastCheckpointStep) return;
    this.lastCheckpointStep = step;
    await this.listener.checkpoint(step, await this.trainer.checkpointFiles());
  }
}

const countTokensWith = (tokenizer: Tokenizer) => (text: string) => tokenizer.encode(text).length;

let run: TrainerRun | null = null;
let controller: RunController | null = null;
/** The run's helper worker (a second core), or null when it trains on one. */
let helper: HelperWorker | null = null;
/** The backend init() started (a helper runs only on wasm or cpu). */
let backendName = '';

function requireRun(): { run: TrainerRun; controller: RunController } {
  if (!run || !controller) throw new Error('no training run in this worker: createRun first');
  return { run, controller };
}

/** A scorecard request of the page as `ragen eval` would play it: the run's suites, its protocol with these sizes. */
function scoring(request: ScorecardRequest, onProgress?: (p: ScorecardProgress) => void) {
  return {
    protocol: { episodes: request.episodes, k: request.k },
    onProgress: onProgress ? (p: ScorecardProgress) => void onProgress(p) : undefined,
  };
}

function endHelper(): void {
  helper?.terminate();
  helper = null;
}

const api: TrainerWorkerApi = {
  async init(backend: BackendChoice) {
    const info = await initBackend(backend, { wasmPaths, log });
    backendName = info.name;
    return info;
  },

  async matmulCheck(n: number) {
    return runMatmulCheck(n);
  },

  async createRun(options: CreateRunOptions, listener: TrainingListener): Promise<RunStatus> {
    if (controller) await controller.stop();
    run?.trainer.dispose();
    run = null;
    controller = null;
    endHelper();

    const { config } = options;
    // A second core: a helper worker generates half of each rollout batch and trains the critic (same results).
    const helpers = helpersFor(options.workers ?? 'auto', {
      cores: navigator.hardwareConcurrency || 1,
      backend: backendName,
      pretrained: config.model.pretrained !== null,
      runs: options.runs,
    });
    helper = helpers > 0 ? spawnHelperWorker() : null;
    const cores = helper ? 2 : 1;
    log(
      helper
        ? 'using 2 cores: a helper worker generates half of each rollout batch and trains the critic'
        : 'using 1 core',
    );
    // The controller does not exist yet when the Trainer is built with this hook; it is read at call time.
    let halting = () => false;
    const progress = new ProgressRelay(
      (p) => void Promise.resolve(listener.progress(p)).catch(() => undefined),
      () => halting(),
    );
    const onProgress = progress.report;
    const sink = new CallbackSink(
      (row) => listener.metrics(row),
      (step, records) => listener.rollouts(step, records),
    );
    let note: string | null = null;
    let trainer: Trainer;
    try {
      if (options.resume) {
        trainer = await Trainer.create(config, {
          resumeFiles: options.resume.files,
          sink,
          log,
          onProgress,
          helper: helper?.api,
        });
        note = `resumed from the checkpoint of step ${trainer.stepsDone}`;
      } else {
        const dir = config.model.warmStart;
        const files = dir ? await fetchCheckpoint(options.siteBase, dir) : null;
        if (files) {
          trainer = await Trainer.create(config, {
            policyFiles: files,
            sink,
            log,
            onProgress,
            helper: helper?.api,
          }).catch((err: unknown) => {
            throw new Error(
              `the warm-start checkpoint ${dir} on this site could not be loaded: ${err instanceof Error ? err.message : String(err)}`,
            );
          });
          note = `started from the warm-start checkpoint ${dir}`;
        } else {
          trainer = await Trainer.create(config, {
            ...freshTinyPolicy(config),
            sink,
            log,
            onProgress,
            helper: helper?.api,
          });
          note = dir
            ? `no warm-start checkpoint at ${dir} on this site: training a freshly initialised tiny model (it cannot write the <think>/<answer> format yet)`
            : 'no warm start configured: training a freshly initialised tiny model';
        }
      }
    } catch (err) {
      endHelper();
      throw err;
    }
    log(note);
    // Before any step: every env block's prompt plus responses must fit the model's positions (as the CLI checks).
    try {
      assertRunFitsContext(config, countTokensWith(trainer.tokenizer), trainer.actor.config.max_position_embeddings);
    } catch (err) {
      trainer.dispose();
      endHelper();
      throw err;
    }
    const current = new TrainerRun(trainer, listener, progress, options.checkpoints ?? true);
    progress.target = trainer;
    run = current;
    const runController = new RunController(current, async (status) => {
      // Every pause, stop and end leaves a checkpoint the page can resume from.
      if (status.phase === 'paused' || status.phase === 'stopped' || status.phase === 'done')
        await current.sendCheckpoint();
      await listener.status({ ...status, message: status.message ?? note, cores });
    });
    halting = () => runController.wantsToHalt();
    controller = runController;
    const status = { ...controller.status(), message: note, cores };
    await listener.status(status);
    return status;
  },

  async play() {
    requireRun().controller.play();
  },

  async pause() {
    await requireRun().controller.pause();
  },

  async stepOnce() {
    await requireRun().controller.stepOnce();
  },

  async stop() {
    await requireRun().controller.stop();
  },

  async checkpoint(): Promise<{ step: number; files: CheckpointBytes }> {
    const { run: r, controller: c } = requireRun();
    if (c.status().phase === 'running') throw new Error('pause the run before taking a checkpoint');
    return { step: r.trainer.stepsDone, files: await r.trainer.checkpointFiles() };
  },

  async playEpisode(tag: string, board: Record<string, unknown>) {
    const { run: r, controller: c } = requireRun();
    if (c.status().phase === 'running') throw new Error('pause the run first: the policy is being trained');
    const cfg = r.trainer.config;
    // The run's own env block for this tag with only the board swapped in, and the run's agent format: the policy
    // reads the same prompt text for the same state as in its training rollouts (src/starpo/config/agent.ts).
    const block = customBoardBlock(cfg, tag, board);
    const format = agentFormatFromConfig(cfg);
    // A board whose prompt cannot fit the model's positions is refused before it is played.
    assertDialoguesFit({
      blocks: [{ name: 'custom board', block }],
      seed: 0,
      format,
      maxPositions: r.trainer.actor.config.max_position_embeddings,
      countTokens: countTokensWith(r.trainer.tokenizer),
    });
    const generate = policyGenerateFn(r.trainer.actor, r.trainer.tokenizer, {
      maxNewTokens: cfg.rollout.maxNewTokens,
      temperature: cfg.rollout.valDoSample ? cfg.rollout.valTemperature : 0,
      seedForCall: (call) => mixSeed(cfg.trainer.seed, call),
    });
    const manager = new EnvGroupManager(
      customBoardEnvGroups(cfg, block),
      envRegistry({ responseLength: format.responseLength }),
    );
    const result = await runRollouts(manager, generate, { ...format, seed: 0 });
    return toRolloutRecord(result.trajectories[0], r.trainer.stepsDone, 'custom');
  },

  async scorecard(source: ScorecardSource, request: ScorecardRequest, onProgress?: (p: ScorecardProgress) => void) {
    // Scoring and training share this worker's tfjs: interleaving them would slow both and muddle the timings.
    if (controller && controller.status().phase === 'running')
      throw new Error('pause the run first: the policy is being trained');
    if (source === 'current') {
      const { run: r } = requireRun();
      const name = `current policy (step ${r.trainer.stepsDone})`;
      return scoreModel(name, r.trainer.actor, r.trainer.tokenizer, r.trainer.config, scoring(request, onProgress));
    }
    const { model, tokenizer } = loadPolicyFiles(source.files, 'the stored checkpoint');
    try {
      return await scoreModel(source.name, model, tokenizer, source.config, scoring(request, onProgress));
    } finally {
      model.dispose();
    }
  },
};

Comlink.expose(api);
