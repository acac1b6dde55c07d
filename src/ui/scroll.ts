// Bringing the charts into view when something starts filling them (Start, the recorded lesson): at 1440 x 900 they
// begin below the fold, and a click that changes one line on screen while the curves appear two screens down reads
// as "nothing happened".
import { tick } from 'svelte';

/** Scrolls the charts panel (id `charts`) to the top of the window, unless its top is already in the upper part of it. */
export async function showCharts(): Promise<void> {
  await tick();
  const charts = document.getElementById('charts');
  if (!charts || charts.offsetParent === null) return; // hidden (another tab of the phone layout)
  const top = charts.getBoundingClientRect().top;
  if (top >= 0 && top < window.innerHeight * 0.4) return;
  charts.scrollIntoView({ block: 'start' });
}
