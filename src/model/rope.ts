// Rotary position embeddings (RoPE), as Qwen2 uses them: each head's vector is split in two halves and
// pair i of (first half, second half) is rotated by the angle position * theta^(-2i/headDim).
//
// The cos/sin tables are computed here in JavaScript and only looked up on the device. Why: WebGPU's sin/cos are
// only accurate near [-pi, pi], while positions reach thousands of radians; and the numbers should be identical on
// every backend. Hugging Face computes the angles in float32 (inverse frequencies in float32, then
// float32(position * invFreq)), so we round the same way with Math.fround and take cos/sin of that float32 angle.
// The rotation itself is the fused `rope` kernel (src/model/kernels).
import * as tf from '@tensorflow/tfjs';

export class RopeTables {
  private cosTable: tf.Tensor2D | null = null; // [length, headDim]
  private sinTable: tf.Tensor2D | null = null;
  private length = 0;
  private readonly invFreq: Float32Array; // [headDim / 2]

  constructor(
    private readonly headDim: number,
    theta: number,
  ) {
    if (headDim % 2 !== 0) throw new Error(`RoPE needs an even head dimension, got ${headDim}`);
    if (!(theta > 0)) throw new Error(`rope_theta must be positive, got ${theta}`);
    this.invFreq = new Float32Array(headDim / 2);
    for (let i = 0; i < headDim / 2; i++) {
      const exponent = Math.fround((2 * i) / headDim);
      this.invFreq[i] = Math.fround(1 / Math.fround(Math.pow(theta, exponent)));
    }
  }

  /** The cos and sin tables [L, headDim] for positions 0 .. L-1, L > maxPosition (owned by this object). */
  tables(maxPosition: number): { cos: tf.Tensor2D; sin: tf.Tensor2D } {
    this.ensureLength(maxPosition + 1);
    return { cos: this.cosTable!, sin: this.sinTable! };
  }

  /** Grows the tables to at least `needed` positions, in powers of two so they are rebuilt only a few times. */
  private ensureLength(needed: number): void {
    if (needed <= this.length) return;
    let length = Math.max(64, this.length);
    while (length < needed) length *= 2;
    const half = this.headDim / 2;
    const cos = new Float32Array(length * this.headDim);
    const sin = new Float32Array(length * this.headDim);
    for (let p = 0; p < length; p++) {
      for (let i = 0; i < half; i++) {
        const angle = Math.fround(p * this.invFreq[i]);
        const c = Math.cos(angle);
        const s = Math.sin(angle);
        // Both halves of the head share the same angles (HF concatenates freqs with itself).
        cos[p * this.headDim + i] = c;
        cos[p * this.headDim + half + i] = c;
        sin[p * this.headDim + i] = s;
        sin[p * this.headDim + half + i] = s;
      }
    }
    this.dispose();
    this.cosTable = tf.keep(tf.tensor2d(cos, [length, this.headDim]));
    this.sinTable = tf.keep(tf.tensor2d(sin, [length, this.headDim]));
    this.length = length;
  }

  dispose(): void {
    this.cosTable?.dispose();
    this.sinTable?.dispose();
    this.cosTable = this.sinTable = null;
    this.length = 0;
  }
}
