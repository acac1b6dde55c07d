// The tfjs backend names, in one list. No tfjs here: the config schema and the page's settings import this
// without pulling tfjs into the page's main thread (backend.ts, which starts the backends, re-exports it).

/** The backends this project runs on, best first: what 'auto' tries in order. */
export const BACKEND_NAMES = ['webgpu', 'wasm', 'cpu'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/** What a run, a flag or a URL may ask for: a backend by name, or 'auto' (the best one that starts). */
export const BACKEND_CHOICES = ['auto', ...BACKEND_NAMES] as const;
export type BackendChoice = (typeof BACKEND_CHOICES)[number];

export function isBackendName(name: string): name is BackendName {
  return (BACKEND_NAMES as readonly string[]).includes(name);
}

export function isBackendChoice(name: string): name is BackendChoice {
  return (BACKEND_CHOICES as readonly string[]).includes(name);
}
