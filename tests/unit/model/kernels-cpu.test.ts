// Every fused kernel of src/model/kernels against the stock tfjs composition it replaces, on the cpu backend.
import { initBackend } from '../../../src/model/backend';
import { describeFusedKernels } from './kernels-helpers';

describeFusedKernels('cpu', {
  setup: async () => {
    await initBackend('cpu');
  },
});
