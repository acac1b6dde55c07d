// Peak tensor memory of each phase of a training step, for `ragen bench --only memory`. Measures and returns; says
// what it is doing through `note` (a progress line per phase: at Qwen2.5-0.5B's shape each phase takes a while).
//
// One step of a PPO run (the sokoban-qwen preset) at a model shape, with `tokens` = B x T:
//   rollout        generate() for `rollouts` dialogues in env groups of `groupSize` (each group shares its prompt,
//                  prefilled once), prompts of T - ROLLOUT_NEW_TOKENS tokens, ROLLOUT_NEW_TOKENS decoded per row:
//                  the KV cache of every row at T tokens, the size a dialogue reaches at the end of a rollout
//   scoring        the actor's per-token log-probs and the critic's values of B x T tokens (no gradient)
//   actor update   forward + backward of the actor's loss (log-probs and entropy, RAGEN's policy-loss shape) over
//                  B x T tokens: the gradients exist at the end
//   optimizer      the actor's clipping + AdamW step, with its gradients alive (the critic's is the same size)
//   critic update  forward + backward of the critic's value loss + its AdamW step
// Every phase runs with the step's resident state: actor and critic weights and both AdamW states (on wasm, whose
// heap holds 4 GiB, and cpu, the model a phase does not run is counted rather than allocated: see measureLayers).
// `peakBytes` is tf.profile's high-water mark of live tensor bytes (measurePeakMemory in model.ts): weights,
// moments and gradients included, the backend's own pools and scratch not.
//
// A full 24-layer model does not fit the wasm heap (4 GiB) and a 1,536-token update of it takes long on a CPU, so
// the section can measure the same shape cut to fewer layers (`layers`, e.g. 2 and 4: every width and the full
// vocabulary kept) and extrapolate to the shape's real depth. Everything a layer adds is linear in the layer count
// (its weights, gradients and moments; its KV cache; one [T, H] checkpoint), and what does not depend on it (the
// embedding, the LM head's chunks, one layer's recomputation) is a constant, so the fit through two depths is
// exact up to the per-phase peaks falling at the same point. Extrapolated rows say so (`extrapolatedFrom`).
//
// `lora` (e.g. RAGEN's base-lora.yaml, `--lora`): actor and critic carry LoRA adapters (src/model/lora.ts), their base
// weights frozen: gradients and AdamW moments exist for the adapters (and the critic's value head) only. The rows
// say so (`lora`).
import * as tf from '@tensorflow/tfjs';
import { AdamW } from '../model/adamw';
import { initBackend, type BackendName } from '../model/backend';
import type { Qwen2Config } from '../model/config';
import { GenerationSession } from '../model/generate';
import { LoraAdapters, loraWeightShapes, type LoraSettings } from '../model/lora';
import { Qwen2Model } from '../model/qwen2';
import { initQwen2WeightsParallel } from '../model/parallelNormal';
import { namedVariableGrads, tokenLogProbs } from '../model/scoring';
import { seededUniform } from '../model/seeded';
import { benchLossGrads, measurePeakMemory, wasmFailure } from './model';

/** The phases, in step order (the `phase` field of a row of the JSON report). */
export const MEMORY_PHASES = ['rollout', 'scoring', 'actor update', 'optimizer', 'critic update'] as const;
export type MemoryPhase = (typeof MEMORY_PHASES)[number];

/** Tokens decoded per row in the rollout phase (the rest of T is prompt): after the first, each decode step holds what
 *  the one before held, so a few show the peak. */
export const ROLLOUT_NEW_TOKENS = 4;

/** One row of the JSON report's `{ "memory": [...] }`; `layers` and `extrapolatedFrom` say what was measured. */
export interface MemoryRow {
  shape: string;
  backend: string;
  /** "BxT": the batch of the update and scoring phases; the rollout phase's row says its own ("128x1536"). */
  tokens: string;
  phase: MemoryPhase | 'step';
  peakBytes: number;
  /** Decoder layers of the model measured (or extrapolated to). */
  layers: number;
  /** For a row computed, not measured: the two layer counts its straight line goes through. */
  extrapolatedFrom?: [number, number];
  /** Part of peakBytes that is resident state counted but not allocated (`lean`: the other model and its AdamW). */
  unallocatedBytes?: number;
  /** The LoRA adapters of actor and critic, when the run trains adapters instead of every weight. */
  lora?: { rank: number; alpha: number; targetModules: string[] };
  /** The vocabulary measured, when cut from the shape's (BenchMemoryOptions.vocab). */
  vocab?: number;
}

export interface BenchMemoryOptions {
  backend: BackendName;
  /** Model shape name and its config (model.ts benchShape). */
  shape: { name: string; config: Qwen2Config };
  /** B x T of the update and scoring phases. */
  batch: number;
  seqLen: number;
  /** Layer counts to measure (default: the shape's own). With two or more, rows at the shape's depth are extrapolated. */
  layers?: readonly number[];
  /** Dialogues of the rollout phase (default 1) and their env group size (default 16, RAGEN's). */
  rollouts?: number;
  groupSize?: number;
  /** Which phases to run (default all). */
  phases?: readonly MemoryPhase[];
  /** Gradient checkpointing per decoder layer, as model.gradientCheckpointing (default true, sokoban-qwen's). */
  checkpointing?: boolean;
  /** LoRA adapters on actor and critic (config.lora), or null / absent: full fine-tuning. */
  lora?: LoraSettings | null;
  /**
   * The vocabulary cut to this size (every other width kept), for shapes whose [V, H] embedding does not fit the
   * backend (Qwen2.5-3B's 1.2 GB one breaks tfjs-wasm's heap, and SwiftShader's 1 GiB buffer limit). Rows say so.
   */
  vocab?: number;
  /** Allocate only the model a phase runs and count the other's resident bytes (default: on wasm and cpu; see
   *  measureLayers). Tensor bytes add up, so the figures are the same either way; lean needs half the memory. */
  lean?: boolean;
  /** AdamW's moments per variable, webgpu's path without the fused kernel (default: as AdamW picks for the backend). */
  perVariableAdamW?: boolean;
  seed?: number;
  note?: (line: string) => void;
}

/**
 * Measured rows for every layer count and phase, plus a 'step' row per layer count (the largest phase: the phases
 * run one after another), and, when two or more layer counts below the shape's depth were measured, the same rows
 * extrapolated to that depth from the two largest.
 */
export async function benchMemory(o: BenchMemoryOptions): Promise<MemoryRow[]> {
  const note = o.note ?? (() => {});
  const depth = o.shape.config.num_hidden_layers;
  const layerCounts = [...(o.layers ?? [depth])].sort((a, b) => a - b);
  const phases = o.phases ?? MEMORY_PHASES;
  const rollouts = o.rollouts ?? 1;
  const groupSize = Math.min(o.groupSize ?? 16, rollouts);
  for (const n of layerCounts)
    if (!Number.isInteger(n) || n < 1 || n > depth)
      throw new Error(`benchMemory: layers must be 1..${depth}, got ${n}`);
  if (o.seqLen <= ROLLOUT_NEW_TOKENS + 1)
    throw new Error(`benchMemory: need more than ${ROLLOUT_NEW_TOKENS + 1} tokens per sequence, got ${o.seqLen}`);
  const backend = await initBackend(o.backend);
  const lean = o.lean ?? backend.name !== 'webgpu';
  const tokens = `${o.batch}x${o.seqLen}`;
  const rows: MemoryRow[] = [];
  for (const layers of layerCounts) {
    const config = { ...o.shape.config, num_hidden_layers: layers, ...(o.vocab ? { vocab_size: o.vocab } : {}) };
    const lora = o.lora
      ? { rank: o.lora.rank, alpha: o.lora.alpha, targetModules: [...o.lora.targetModules] }
      : undefined;
    const row = (phase: MemoryPhase | 'step', peakBytes: number, t = tokens): MemoryRow => ({
      shape: o.shape.name,
      backend: backend.name,
      tokens: t,
      phase,
      peakBytes,
      layers,
      ...(lora ? { lora } : {}),
      ...(o.vocab ? { vocab: o.vocab } : {}),
    });
    const measured = await measureLayers(config, o, phases, rollouts, groupSize, lean, (line) =>
      note(`${o.shape.name} ${layers} layer(s): ${line}`),
    );
    let step: MemoryRow | null = null;
    for (const phase of MEMORY_PHASES) {
      const m = measured.get(phase);
      if (!m) continue;
      const r = row(phase, m.peak + m.unallocated, phase === 'rollout' ? `${rollouts}x${o.seqLen}` : tokens);
      if (m.unallocated) r.unallocatedBytes = m.unallocated;
      rows.push(r);
      if (!step || r.peakBytes > step.peakBytes) step = { ...r, phase: 'step', tokens };
    }
    if (step) rows.push(step);
  }
  const below = layerCounts.filter((n) => n < depth);
  if (below.length >= 2) {
    const [a, b] = below.slice(-2);
    for (const r of rows.filter((x) => x.layers === b)) {
      const at = rows.find((x) => x.layers === a && x.phase === r.phase)!;
      const line = (x: number, y: number) => Math.round(x + ((x - y) / (b - a)) * (depth - b)); // through (a, y) and (b, x)
      const out: MemoryRow = {
        ...r,
        layers: depth,
        peakBytes: line(r.peakBytes, at.peakBytes),
        extrapolatedFrom: [a, b],
      };
      if (r.unallocatedBytes !== undefined) out.unallocatedBytes = line(r.unallocatedBytes, at.unallocatedBytes ?? 0);
      rows.push(out);
    }
  }
  return rows;
}

/** What one depth measured: per phase, the peak, and how much of it is resident state counted but not allocated. */
type Measured = Map<MemoryPhase, { peak: number; unallocated: number }>;

/**
 * One model depth: allocates the step's resident state, runs each phase under tf.profile, frees everything.
 * `lean` (wasm, whose heap holds 4 GiB, and cpu): the actor's phases run with only the actor and its AdamW state allocated,
 * the critic's with only the critic and its state; the other model's weights and moments (3 x its weight bytes,
 * exactly what allocating them would add) are added to the measured peak and reported as `unallocated`.
 */
async function measureLayers(
  config: Qwen2Config,
  o: BenchMemoryOptions,
  phases: readonly MemoryPhase[],
  rollouts: number,
  groupSize: number,
  lean: boolean,
  note: (line: string) => void,
): Promise<Measured> {
  const seed = o.seed ?? 0;
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
  // Weights + AdamW's two moments, float32 (the critic's differs by its head); with LoRA, moments of the adapters only.
  const adapterParams = o.lora
    ? Object.values(loraWeightShapes(config, o.lora)).reduce((s, [r, c]) => s + r * c, 0)
    : 0;
  const residentBytes = o.lora ? 4 * (paramCount(config) + 3 * adapterParams) : 3 * 4 * paramCount(config);
  const ids = tf.tensor2d(randomIds(o.batch, o.seqLen, config.vocab_size, seed), undefined, 'int32');
  const results: Measured = new Map();
  const record = (name: MemoryPhase, peak: number, unallocated: number) => {
    const prev = results.get(name);
    if (!prev || peak + unallocated > prev.peak + prev.unallocated) results.set(name, { peak, unallocated });
  };
  let doing = 'allocating'; // what a failure happened in
  const phase = async (name: MemoryPhase, unallocated: number, body: () => Promise<void>) => {
    if (!phases.includes(name)) return;
    doing = name;
    note(`${name} ... (${elapsed()} so far)`);
    const phaseStarted = Date.now();
    const peak = await measurePeakMemory(body);
    record(name, peak.peakBytes, unallocated);
    // The phase's own time first: the running total also holds the models' random initialisation (tens of seconds
    // at qwen0.5b), which would otherwise read as a slow phase.
    note(
      `${name}: peak ${gib(peak.peakBytes + unallocated)}${unallocated ? ` (of which ${gib(unallocated)} counted, not allocated)` : ''}, ` +
        `resident before ${gib(peak.startBytes)}, ${peak.kernels.toLocaleString('en-US')} kernels, ` +
        `${((Date.now() - phaseStarted) / 1000).toFixed(1)} s (${elapsed()} so far)`,
    );
  };
  const checkpointing = o.checkpointing ?? true;
  const build = async (valueHead: boolean) => {
    doing = `building the ${valueHead ? 'critic' : 'actor'}`;
    note(
      `building the ${valueHead ? 'critic' : 'actor'} (${(paramCount(config) / 1e6).toFixed(0)}M parameters, random weights; ${elapsed()} so far)`,
    );
    const model = new Qwen2Model(
      config,
      await initQwen2WeightsParallel(config, seed + (valueHead ? 1 : 0), { valueHead }),
      { valueHead },
    );
    if (o.lora) model.addAdapters(LoraAdapters.init(config, o.lora, seed + (valueHead ? 3 : 2)));
    model.gradientCheckpointing = checkpointing;
    return {
      model,
      optimizer: new AdamW(model.trainableVariables, { lr: valueHead ? 1e-5 : 1e-6, perVariable: o.perVariableAdamW }),
    };
  };
  const free = (m: { model: Qwen2Model; optimizer: AdamW } | null) => {
    m?.optimizer.dispose();
    m?.model.dispose();
  };
  let actor: Awaited<ReturnType<typeof build>> | null = null,
    critic: Awaited<ReturnType<typeof build>> | null = null;
  let actorGrads: Record<string, tf.Tensor> | null = null;
  let failed = false;
  try {
    actor = await build(false);
    if (!lean) critic = await build(true);
    const missingCritic = lean ? residentBytes : 0;
    note(
      `resident: ${gib(tf.memory().numBytes)} in ${tf.memory().numTensors} tensors${lean ? ` (+ ${gib(missingCritic)} of critic state counted, not allocated)` : ''}`,
    );
    const a = actor.model;
    await phase('rollout', missingCritic, async () => {
      const groups = Math.ceil(rollouts / groupSize);
      const prompts = randomIds(groups, o.seqLen - ROLLOUT_NEW_TOKENS, config.vocab_size, seed + 2);
      const session = new GenerationSession(a);
      try {
        await session.generate(
          Array.from({ length: rollouts }, (_, r) => prompts[Math.floor(r / groupSize)]),
          { maxNewTokens: ROLLOUT_NEW_TOKENS, temperature: 1, seed, padTokenId: 0 },
          Array.from({ length: rollouts }, (_, r) => r),
        );
      } finally {
        session.dispose();
      }
    });
    const scoreWith = (model: Qwen2Model) => async () => {
      const out = model.hasValueHead ? [model.forward(ids)] : Object.values(tokenLogProbs(model, ids));
      await out[0].data();
      tf.dispose(out);
    };
    await phase('scoring', missingCritic, async () => {
      await scoreWith(a)();
      if (critic) await scoreWith(critic.model)();
    });
    const actorBackward = async () => {
      const { value, grads } = benchLossGrads(a, ids, a.trainableVariables);
      await value.data();
      value.dispose();
      actorGrads = grads;
    };
    await phase('actor update', missingCritic, actorBackward);
    if (phases.includes('optimizer') && !actorGrads) {
      // The optimizer alone: gradients of the right shapes stand in for a backward pass (same bytes, no compute).
      actorGrads = Object.fromEntries(
        Object.entries(a.trainableVariables).map(([n, v]) => [n, tf.fill(v.shape, 1e-3)]),
      );
    }
    await phase('optimizer', missingCritic, async () => {
      await actor!.optimizer.stepClipped(actorGrads!, 1.0);
      await a.variables['model.norm.weight'].data(); // webgpu queues work: wait for the step to have run
    });
    if (actorGrads) tf.dispose(Object.values(actorGrads));
    actorGrads = null;
    let missingActor = 0;
    if (lean && (phases.includes('scoring') || phases.includes('critic update'))) {
      free(actor);
      actor = null;
      critic = await build(true);
      missingActor = residentBytes;
      note(`resident: ${gib(tf.memory().numBytes)} (+ ${gib(missingActor)} of actor state counted, not allocated)`);
      await phase('scoring', missingActor, scoreWith(critic.model));
    }
    const c = critic!;
    await phase('critic update', missingActor, async () => {
      const { value, grads } = namedVariableGrads(c.model.trainableVariables, () =>
        tf.tidy(() => c.model.forward(ids).sub(0.5).square().mean() as tf.Scalar),
      );
      value.dispose();
      await c.optimizer.stepClipped(grads, 1.0);
      tf.dispose(Object.values(grads));
      await c.model.variables['model.norm.weight'].data();
    });
  } catch (err) {
    failed = true;
    const wasm = wasmFailure(err);
    if (!wasm) throw err;
    throw new Error(
      `${o.shape.name} at ${config.num_hidden_layers} layer(s), ${doing}: ${wasm}; it may fit with fewer ` +
        '--layers (the full depth is then extrapolated), a smaller --vocab, or on --backend webgpu or cpu',
      { cause: err },
    );
  } finally {
    const freeAll = () => {
      if (actorGrads) tf.dispose(Object.values(actorGrads));
      tf.dispose(ids);
      free(actor);
      free(critic);
    };
    if (!failed) freeAll();
    else {
      try {
        freeAll();
      } catch {
        // After a failed phase, freeing may fail too (tfjs-wasm after an abort): the phase's error is the one reported.
      }
    }
  }
  return results;
}

function paramCount(c: Qwen2Config): number {
  const hd = c.hidden_size / c.num_attention_heads;
  const layer =
    2 * c.hidden_size +
    (c.num_attention_heads + 2 * c.num_key_value_heads) * hd * (c.hidden_size + 1) +
    c.hidden_size * c.num_attention_heads * hd +
    3 * c.hidden_size * c.intermediate_size;
  return c.vocab_size * c.hidden_size + c.num_hidden_layers * layer + c.hidden_size;
}

/** Random token ids [rows, length] in [1, vocab), from a seeded generator. */
function randomIds(rows: number, length: number, vocab: number, seed: number): number[][] {
  const uniform = seededUniform(seed);
  return Array.from({ length: rows }, () => Array.from({ length }, () => 1 + Math.floor(uniform() * (vocab - 1))));
}

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GiB`;

/** The rows as the bench's printed table: "<shape> <n> layers [extrapolated] <phase> (<tokens>) peak bytes". */
export function memoryRowsTable(rows: readonly MemoryRow[]): Record<string, number> {
  return Object.fromEntries(
    rows.map((r) => [
      `${r.shape}${r.lora ? ` LoRA r${r.lora.rank}` : ''}${r.vocab ? ` vocab ${r.vocab}` : ''} ${r.layers} layers${r.extrapolatedFrom ? ` extrapolated from ${r.extrapolatedFrom.join(' and ')}` : ''} ${r.phase} (${r.tokens}) peak bytes`,
      r.peakBytes,
    ]),
  );
}
