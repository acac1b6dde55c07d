// Parity of the tfjs Qwen2 (forward, log-probs, entropy, gradients, AdamW, KV-cache greedy decoding) with the
// independent PyTorch reference in tools/parity/, on the wasm backend. Tolerances: see parity-helpers.ts.
import { defineParitySuite } from './parity-helpers';

defineParitySuite('wasm');
