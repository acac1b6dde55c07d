// tf.profile of one piece of work, with its kernels' count and time summed by kernel name: what
// profile-step.ts and profile-update.ts print.
import * as tf from '@tensorflow/tfjs';

export interface KernelProfile {
  /** Kernels launched. */
  kernels: number;
  /** Their summed kernel time, ms. */
  totalMs: number;
  /** Wall time of the profiled work, ms (profiling slows it down). */
  wallMs: number;
  /** [kernel name, calls and summed ms], the costliest first. */
  byName: [string, { n: number; ms: number }][];
}

export async function profileKernels(work: () => Promise<void>): Promise<KernelProfile> {
  const t0 = performance.now();
  const prof = await tf.profile(work);
  const wallMs = performance.now() - t0;
  const byName = new Map<string, { n: number; ms: number }>();
  for (const k of prof.kernels) {
    const e = byName.get(k.name) ?? { n: 0, ms: 0 };
    e.n++;
    e.ms += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
    byName.set(k.name, e);
  }
  const totalMs = [...byName.values()].reduce((a, e) => a + e.ms, 0);
  return { kernels: prof.kernels.length, totalMs, wallMs, byName: [...byName].sort((a, b) => b[1].ms - a[1].ms) };
}

/** One line per kernel name for the `top` costliest: calls, ms and share of the kernel time. */
export function printKernelRows(p: KernelProfile, top: number, nameWidth: number, callsWidth: number): void {
  for (const [name, e] of p.byName.slice(0, top)) {
    console.log(
      `  ${name.padEnd(nameWidth)} ${String(e.n).padStart(callsWidth)} calls ${e.ms.toFixed(1).padStart(8)} ms ${((100 * e.ms) / p.totalMs).toFixed(1).padStart(5)} %`,
    );
  }
}
