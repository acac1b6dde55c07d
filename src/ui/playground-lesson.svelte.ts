// The classroom lesson: training the lesson preset's arms side by side, or showing the recorded lesson that ships
// with the site.
import { fetchRecordedLesson, LESSON_PRESET } from './lesson';
import type { PresetName } from '../starpo/presets';
import { messageOf, playground, showRuns } from './playground.svelte';
import { clearField, setSettings } from './playground-settings.svelte';
import { siteBase } from './playground-workers.svelte';
import { startTraining } from './playground-training.svelte';

/**
 * The lesson page's one click: the lesson preset's arms (vanilla StarPO and StarPO-S) trained side by side, each in
 * its own worker, with the knobs the URL carries (e.g. `steps=1` for a quick check).
 */
export function startLesson(preset: PresetName = LESSON_PRESET): Promise<void> {
  playground.lessonError = null;
  if (playground.settings.preset !== preset) {
    clearField('preset');
    setSettings({ ...playground.settings, preset });
  }
  return startTraining();
}

/** Shows the recorded lesson that ships with the site (public/lessons/<preset>/): no training, loads at once. */
export async function loadRecordedLesson(preset: string = LESSON_PRESET): Promise<void> {
  playground.lessonError = null;
  playground.busy = true;
  try {
    const lesson = await fetchRecordedLesson(siteBase(), preset);
    showRuns(
      lesson.arms.map((a) => ({ arm: a.name, runId: null, status: null, rows: a.rows, rollouts: a.rollouts, checkpointStep: null, progress: null, halting: null })),
    );
    playground.lesson = lesson.manifest;
  } catch (err) {
    playground.lessonError = messageOf(err);
  } finally {
    playground.busy = false;
  }
}
