// Vite builds the browser playground: index.html at the repo root, Svelte 5 components in src/ui, the trainer in a
// module worker (workers/). `npm run build` writes a static site to dist/ that works from any static server and
// sub-path (base './'). `npx vite preview` serves that build.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

export default defineConfig({
  root: '.',
  base: './',
  // Svelte 5 compiles `<script lang="ts">` itself, so no svelte.config.js / preprocessor is needed.
  plugins: [svelte({ configFile: false })],
  resolve: {
    alias: {
      // backend.ts loads Dawn (`webgpu`) only in Node; keep its Node built-ins and native binary out of the bundle.
      webgpu: fileURLToPath(new URL('./workers/dawn-browser-stub.ts', import.meta.url)),
    },
  },
  // ES-module workers: the trainer worker imports tfjs backends dynamically, which classic workers cannot bundle.
  worker: { format: 'es' },
  build: { outDir: 'dist', emptyOutDir: true },
});
