// Vite builds the browser playground: index.html at the repo root, Svelte 5 components in src/ui, the trainer in a
// module worker (workers/). `npm run build` writes a static site to dist/ that works from any static server and
// sub-path (base './'). `npx vite preview` serves that build.
//
// Both servers send the two cross-origin-isolation headers, so `self.crossOriginIsolated` is true in the page and
// its workers (SharedArrayBuffer, wasm threads, precise timers). A static host should send the same two headers
// (README, "Hosting the static build"); without them the page still trains on every core, and says what it lacks.
// The page loads nothing from another origin (no CDN, no web fonts), so `require-corp` blocks nothing.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

/** The headers that make the page cross-origin isolated (README names them for static hosts). */
export const CROSS_ORIGIN_ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

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
  server: { headers: CROSS_ORIGIN_ISOLATION_HEADERS },
  preview: { headers: CROSS_ORIGIN_ISOLATION_HEADERS },
});
