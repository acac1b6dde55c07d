// Why wasm threads stay off (docs/playground.md, "Hosting the static build"): the fused wasm kernels are a
// separate module instantiated on tfjs's own WebAssembly.Memory, and it declares that memory unshared. tfjs's
// threaded build runs on shared memory, which this module refuses to link with. If the kernels are ever rebuilt for
// shared memory, this test fails: then threads may work with them, and docs/playground.md (and backend.ts's reason)
// should say so.
import { describe, expect, it } from 'vitest';
import { KERNELS_WASM_BASE64 } from '../../../src/model/kernels/wasm/module';

const kernelModule = () => new WebAssembly.Module(Buffer.from(KERNELS_WASM_BASE64, 'base64'));
const memory = (shared: boolean) => new WebAssembly.Memory({ initial: 256, maximum: 65536, shared });

describe('the fused wasm kernels and threads', () => {
  it("import one memory (tfjs's heap) and link with an unshared one", () => {
    expect(WebAssembly.Module.imports(kernelModule())).toEqual([{ module: 'env', name: 'memory', kind: 'memory' }]);
    expect(() => new WebAssembly.Instance(kernelModule(), { env: { memory: memory(false) } })).not.toThrow();
  });

  it("refuse the shared memory of tfjs's threaded wasm build", () => {
    expect(() => new WebAssembly.Instance(kernelModule(), { env: { memory: memory(true) } })).toThrow(/shared/);
  });
});
