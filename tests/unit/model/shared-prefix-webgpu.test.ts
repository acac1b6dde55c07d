// The shared-prefix suite (shared-prefix-suite.ts) on WebGPU through Dawn in Node: on a machine without a GPU the
// adapter is Chromium's SwiftShader (VK_ICD_FILENAMES is set to it unless already set). It never skips.
import { defineSharedPrefixSuite } from './shared-prefix-suite';

defineSharedPrefixSuite('webgpu');
