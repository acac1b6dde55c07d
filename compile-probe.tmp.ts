import * as tf from '@tensorflow/tfjs';
import { initBackend } from './src/model/backend';
const flags = JSON.parse(process.argv[2] ?? '[]');
process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
await initBackend('webgpu', { dawnFlags: flags });
const t0 = performance.now();
for (let i = 1; i <= 12; i++) {
  const a = tf.randomNormal([7 + i, 33 + i]); const b = tf.randomNormal([33 + i, 19 + 2 * i]);
  const c = tf.tidy(() => tf.softmax(tf.matMul(a, b).relu().add(1)).sum(1));
  await c.data(); tf.dispose([a, b, c]);
}
console.log(JSON.stringify(flags), 'ms', Math.round(performance.now() - t0), 'cpu user ms', Math.round(process.cpuUsage().user / 1000));
