// The playground's `run-status` word and `step-progress` text, from the arms' worker statuses.
import { describe, expect, it } from 'vitest';
import {
  formatDuration,
  progressText,
  runStatusText,
  timeEstimate,
  timeText,
  type ArmState,
} from '../../../src/ui/run-status';
import type { RunPhase } from '../../../workers/protocol';

const arm = (phase: RunPhase | null, halting: ArmState['halting'] = null): ArmState => ({
  status: phase === null ? null : { phase, step: 3, totalSteps: 10, message: null },
  halting,
});

describe('runStatusText', () => {
  it('maps the worker phases to docs/architecture.md words', () => {
    expect(runStatusText([])).toBe('idle');
    expect(runStatusText([arm(null)])).toBe('idle'); // a stored run being viewed
    expect(runStatusText([arm('ready')])).toBe('idle');
    expect(runStatusText([arm('loading')])).toBe('running');
    expect(runStatusText([arm('running')])).toBe('running');
    expect(runStatusText([arm('paused')])).toBe('paused');
    expect(runStatusText([arm('stopped')])).toBe('stopped');
    expect(runStatusText([arm('done')])).toBe('done');
    expect(runStatusText([arm('failed')])).toBe('failed');
  });

  it('says stopping / pausing from the click until the worker confirms', () => {
    expect(runStatusText([arm('running', 'stop')])).toBe('stopping');
    expect(runStatusText([arm('running', 'pause')])).toBe('pausing');
  });

  it('for two arms: running while either runs, stopping while either is asked to stop, done when both are', () => {
    expect(runStatusText([arm('running'), arm('paused')])).toBe('running');
    expect(runStatusText([arm('running'), arm('running', 'stop')])).toBe('stopping');
    expect(runStatusText([arm('done'), arm('stopped')])).toBe('stopped');
    expect(runStatusText([arm('done'), arm('done')])).toBe('done');
  });
});

describe('progressText', () => {
  it('names the phase and its count with a unit', () => {
    expect(progressText(null)).toBe('');
    expect(progressText({ step: 4, phase: 'rollout', done: 12, total: 48 })).toBe('rollout 12/48 tokens');
    expect(progressText({ step: 4, phase: 'update', done: 1, total: 2 })).toBe('update 1/2 optimizer steps');
    expect(progressText({ step: 1, phase: 'scoring', done: 0, total: 3 })).toBe('scoring 0/3 micro-batches');
  });
});

describe('timeEstimate', () => {
  it('paces a run by its last steps and says the time its remaining steps take', () => {
    const rows = [{ step: 0 }, ...[10, 10, 10, 2, 2, 2, 2].map((t, i) => ({ step: i + 1, 'timing_s/step': t }))];
    const e = timeEstimate(rows, 7, 37)!;
    // The last 5 steps: (10 + 2 + 2 + 2 + 2) / 5 = 3.6 s a step; 30 steps left.
    expect(e.stepsPerMinute).toBeCloseTo(60 / 3.6);
    expect(e.secondsLeft).toBeCloseTo(108);
    expect(timeText(e)).toBe('17 steps/min · about 2 min left');
  });
  it('is null before a step was timed (the validation row of step 0 has no step time)', () => {
    expect(timeEstimate([{ step: 0, 'timing_s/testing': 3 }], 0, 10)).toBeNull();
  });
  it('formats durations as people say them', () => {
    expect(formatDuration(42.4)).toBe('42 s');
    expect(formatDuration(400)).toBe('7 min');
    expect(formatDuration(3900)).toBe('1 h 5 min');
  });
});
