// Parity of the tfjs Qwen2 (forward, log-probs, entropy, gradients, AdamW, KV-cache greedy decoding) with the
// independent PyTorch reference in tools/parity/, on WebGPU through Dawn in Node. On a machine without a GPU the
// adapter is Chromium's SwiftShader (Debian's chromium package; VK_ICD_FILENAMES is set to it unless already set).
// It never skips: if WebGPU cannot start, initBackend throws and the suite fails. Tolerances: parity-helpers.ts.
import { defineParitySuite } from './parity-helpers';

defineParitySuite('webgpu');
