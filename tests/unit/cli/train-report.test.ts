// What `ragen train` prints around its step lines: the columns explained once, the BanditTest note where a tiny
// model trained on Bandit is validated on BanditTest, and the next commands after the run.
import { describe, expect, it } from 'vitest';
import { nextCommands, stepLineLegend } from '../../../src/cli/trainReport';
import { applyOverrides } from '../../../src/starpo/config';
import { resolvePreset } from '../../../src/starpo/presets';

const presetConfig = (name: string) => resolvePreset(name).arms[0].config;

describe('the step line legend', () => {
  it('names every column of the step line, with the validation schedule of the run', () => {
    const text = stepLineLegend(presetConfig('bandit-tiny')).join('\n');
    for (const column of ['success', 'val <env>', 'reward std', 'entropy', 's/step']) expect(text).toContain(column);
    expect(text).toContain('before training, then every 10 steps');
    expect(stepLineLegend(applyOverrides(presetConfig('bandit-tiny'), ['trainer.testFreq=0'])).join('\n')).toContain(
      'before training only',
    );
  });

  it("says why a tiny Bandit model's BanditTest success is 0, naming both arm pairs", () => {
    const text = stepLineLegend(presetConfig('bandit-tiny')).join('\n');
    expect(text).toContain("BanditTest is RAGEN's held-out bandit");
    expect(text).toContain('Trader / Librarian, not Phoenix / Dragon');
    expect(text).toContain('BanditTest 0.00 is expected');
    // A local Qwen checkpoint can read new names: the note says what BanditTest is, not that 0 is expected.
    const qwen = stepLineLegend(applyOverrides(presetConfig('bandit-tiny'), ['model.path=/models/qwen'])).join('\n');
    expect(qwen).toContain("BanditTest is RAGEN's held-out bandit");
    expect(qwen).not.toContain('0.00 is expected');
    // No BanditTest validation, no note.
    expect(stepLineLegend(presetConfig('frozenlake-tiny')).join('\n')).not.toContain('BanditTest');
  });
});

describe('the next commands', () => {
  it("offers an eval of each run's newest checkpoint, then the playground", () => {
    const lines = nextCommands([
      { out: 'runs/echo-trap/starpo', checkpoint: 'runs/echo-trap/starpo/checkpoints/step-60' },
      { out: 'runs/echo-trap/starpo-s', checkpoint: 'runs/echo-trap/starpo-s/checkpoints/step-60' },
    ]);
    expect(lines[0]).toMatch(/^next: npx ragen eval --checkpoint runs\/echo-trap\/starpo\/checkpoints\/step-60 +# /);
    expect(lines[1]).toMatch(/^ {6}npx ragen eval --checkpoint runs\/echo-trap\/starpo-s\/checkpoints\/step-60 +# /);
    expect(lines[2]).toMatch(
      /^ {6}npm run dev +# the playground; its Runs panel imports runs\/echo-trap\/starpo\/metrics\.jsonl/,
    );
  });

  it('offers only the playground when no checkpoint was written', () => {
    expect(nextCommands([{ out: 'runs/x', checkpoint: null }])).toEqual([
      'next: npm run dev   # the playground; its Runs panel imports runs/x/metrics.jsonl',
    ]);
  });
});
