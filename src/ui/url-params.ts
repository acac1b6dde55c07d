// Settings read from the page's URL, so a link (or a test) can pin them: `?backend=wasm`.
import { BACKEND_CHOICES, type BackendChoice } from '../../workers/protocol';

/** The backend requested by `?backend=...`; 'auto' when absent. An unknown value throws an Error naming it. */
export function requestedBackend(search: string): BackendChoice {
  const value = new URLSearchParams(search).get('backend');
  if (value === null || value === '') return 'auto';
  if (!(BACKEND_CHOICES as readonly string[]).includes(value)) {
    throw new Error(`unknown backend '${value}' in the URL (expected one of: ${BACKEND_CHOICES.join(', ')})`);
  }
  return value as BackendChoice;
}
