// The Trainer's progress hook as the worker uses it, with three jobs:
// 1. tell the page where the step is ("rollout 12/48"), at most a few times a second (a Comlink message per token
//    would flood the page);
// 2. let the page's Pause / Stop messages in: on wasm every `await` inside a step resolves as a microtask, so
//    without an explicit yield to the event loop the worker would not even read "stop" until the step ended;
// 3. give up the step (StepAbandoned) when the controller wants to halt and the Trainer can still drop the step
//    without having kept anything (before its first optimizer step).
import type { StepPhase } from '../src/starpo/trainer';
import { StepAbandoned } from './run-controller';
import type { StepProgress } from './protocol';

/** How often the step yields to the worker's event loop (ms): the upper bound on how late Stop is read. */
const YIELD_EVERY_MS = 100;
/** How often progress is sent to the page (ms); phase changes are always sent. */
const SEND_EVERY_MS = 200;

/** One macrotask turn: lets queued messages (pause, stop) run. MessageChannel, unlike setTimeout, is not clamped. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(0);
  });
}

export interface ProgressTarget {
  /** Completed steps (the step in flight is this + 1). */
  readonly stepsDone: number;
  /** The Trainer's `canAbandonStep`. */
  readonly canAbandonStep: boolean;
}

export class ProgressRelay {
  private lastYield = 0;
  private lastSent = 0;
  private lastPhase: StepPhase | null = null;
  /** Set once the Trainer exists (it is built with this relay's hook). */
  target: ProgressTarget | null = null;

  constructor(
    private readonly send: (progress: StepProgress | null) => void,
    /** True when Pause or Stop was asked for. */
    private readonly wantsToHalt: () => boolean,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The Trainer's onProgress. */
  readonly report = async (phase: StepPhase, done: number, total: number): Promise<void> => {
    const t = this.now();
    if (t - this.lastYield >= YIELD_EVERY_MS) {
      this.lastYield = t;
      await yieldToEventLoop();
    }
    if (this.wantsToHalt() && this.target?.canAbandonStep) throw new StepAbandoned();
    if (phase !== this.lastPhase || done === total || t - this.lastSent >= SEND_EVERY_MS) {
      this.lastPhase = phase;
      this.lastSent = t;
      this.send({ step: (this.target?.stepsDone ?? 0) + 1, phase, done, total });
    }
  };

  /** The step ended (or was abandoned): no progress to show. */
  clear(): void {
    this.lastPhase = null;
    this.send(null);
  }
}
