// Every fused kernel of src/model/kernels against the stock tfjs composition it replaces, on the wasm backend.
import { initBackend } from '../../../src/model/backend';
import { describeFusedKernels } from './kernels-helpers';

describeFusedKernels('wasm', {
  setup: async () => {
    await initBackend('wasm');
  },
});
