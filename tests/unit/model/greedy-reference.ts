// The definition of greedy decoding, which the KV-cache generation tests (generate.test.ts on wasm,
// generate-webgpu.test.ts on webgpu) compare with: rerun the whole sequence, take the argmax of the last position.
import * as tf from '@tensorflow/tfjs';
import type { Qwen2Model } from '../../../src/model/qwen2';

export async function fullSequenceGreedy(model: Qwen2Model, prompt: number[], steps: number): Promise<number[]> {
  const vocab = model.config.vocab_size;
  const ids = [...prompt];
  for (let s = 0; s < steps; s++) {
    const next = tf.tidy(() => {
      const logits = model.forward(tf.tensor2d([ids], undefined, 'int32'));
      return tf.argMax(logits.slice([0, ids.length - 1, 0], [1, 1, vocab]).reshape([vocab]));
    });
    ids.push((await next.data())[0]);
    next.dispose();
  }
  return ids.slice(prompt.length);
}
