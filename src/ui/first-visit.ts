// Whether this browser has dismissed the first-visit explainer (kept in localStorage; without storage, e.g. some
// private modes, the explainer simply shows again on the next visit).
const DISMISSED_KEY = 'ragen-playground-explainer-dismissed';

export function explainerDismissed(): boolean {
  try {
    return localStorage.getItem(DISMISSED_KEY) === '1';
  } catch {
    return false;
  }
}

export function dismissExplainer(): void {
  try {
    localStorage.setItem(DISMISSED_KEY, '1');
  } catch {
    // Nothing to keep it in.
  }
}
