// The classroom lesson's recording: showing the lesson that ships with the site, every run of it. (Training it live
// is lesson-runs.svelte.ts.)
import { fetchRecordedLesson, LESSON_PRESET } from './lesson';
import { messageOf, playground, showRuns } from './playground.svelte';
import { siteBase } from './playground-workers.svelte';
import { showRecordedRuns } from './lesson-runs.svelte';

/** Shows the recorded lesson that ships with the site (public/lessons/<preset>/): no training, loads at once. */
export async function loadRecordedLesson(preset: string = LESSON_PRESET): Promise<void> {
  playground.lessonError = null;
  playground.busy = true;
  try {
    const lesson = await fetchRecordedLesson(siteBase(), preset);
    showRuns(
      lesson.arms.map((a) => ({
        arm: a.name,
        runId: null,
        status: null,
        rows: a.rows,
        rollouts: a.rollouts,
        checkpointStep: null,
        progress: null,
        halting: null,
      })),
    );
    showRecordedRuns(lesson);
    playground.lesson = lesson.manifest;
  } catch (err) {
    playground.lessonError = messageOf(err);
  } finally {
    playground.busy = false;
  }
}
