// The pure parts of the experiments library: metrics parsing, the echo-trap sign detection, run summaries, and the
// SVG chart (one polyline per series, markers, escaped text).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  firstDrop,
  labSeedDirs,
  movingAverage,
  readMetrics,
  series,
  summarise,
  type MetricsRow,
} from '../../../experiments/lib/analysis';
import { lineChartSvg, niceTicks } from '../../../experiments/lib/chart';
import { lastStep } from '../../../experiments/lib/runs';
import {
  STARPO_S_SECONDS,
  estimateMinutes,
  estimateStepSeconds,
  starpoS,
  vanilla,
} from '../../../experiments/lib/configs';
import { writePngs } from '../../../experiments/lib/png';
import { parseRecipeOverrides } from '../../../experiments/lib/recipeOverrides';

const row = (step: number, extra: Record<string, number>): MetricsRow => ({ step, ...extra }) as MetricsRow;

describe('experiments: metrics', () => {
  it("lists a lesson lab's seed folders in seed order, nothing else", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lab-'));
    for (const name of ['seed-10', 'seed-9', 'seed-100', 'seed-x']) fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, 'seed-9-starpo.done'), '');
    expect(labSeedDirs(dir)).toEqual(['seed-9', 'seed-10', 'seed-100']);
    fs.rmSync(dir, { recursive: true });
  });

  it('reads metrics.jsonl, skips a cut-off last line, and lets a resumed step win', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exp-'));
    fs.writeFileSync(
      path.join(dir, 'metrics.jsonl'),
      '{"step":0,"a":1}\n{"step":1,"a":2}\n{"step":1,"a":3}\n{"step":2,"a":4}\n{"step":3,"a"',
    );
    const rows = readMetrics(dir);
    expect(rows.map((r) => [r.step, r.a])).toEqual([
      [0, 1],
      [1, 3],
      [2, 4],
    ]);
    expect(lastStep(dir)).toBe(2);
    expect(lastStep(path.join(dir, 'none'))).toBe(-1);
    fs.rmSync(dir, { recursive: true });
  });

  it('series keeps only finite values; the moving average trails', () => {
    const rows = [row(0, { x: 1 }), row(1, {}), row(2, { x: 3 }), row(3, { x: NaN }), row(4, { x: 5 })];
    expect(series(rows, 'x')).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
    ]);
    expect(
      movingAverage(
        [
          [0, 1],
          [1, 3],
          [2, 5],
        ],
        2,
      ),
    ).toEqual([
      [0, 1],
      [1, 2],
      [2, 4],
    ]);
  });

  it('firstDrop finds the first step whose trailing mean falls below a fraction of the early level', () => {
    const flat = Array.from({ length: 20 }, (_, i): [number, number] => [i + 1, 1]);
    expect(firstDrop(flat, 0.5)).toBeNull();
    const falling = flat.map(([s]): [number, number] => [s, s <= 10 ? 1 : 0.1]);
    // early mean 1; trailing 5-step means: step 12 = (1+1+1+0.1+0.1)/5 = 0.64, step 13 = 0.46 < 0.5
    expect(firstDrop(falling, 0.5)).toBe(13);
    expect(firstDrop(flat.slice(0, 6), 0.5)).toBeNull(); // too short to tell
  });

  it("summarise reads the env tag, validation peak / final, and the trainer's warning flags", () => {
    const rows = [
      row(0, { 'val-env/Bandit/success': 0.5 }),
      ...Array.from({ length: 12 }, (_, i) =>
        row(i + 1, {
          'train/Bandit/success': i < 6 ? 0.2 : 0.8,
          'rollout/in_group_std': i < 6 ? 0.4 : 0.05,
          'actor/entropy_loss': 0.5,
          'echo_trap/warning': i >= 9 ? 1 : 0,
          ...(i + 1 === 10 ? { 'val-env/Bandit/success': 0.9 } : {}),
          ...(i + 1 === 12 ? { 'val-env/Bandit/success': 0.7 } : {}),
        }),
      ),
    ];
    const s = summarise(rows);
    expect(s.tag).toBe('Bandit');
    expect([s.valStart, s.valPeak, s.valPeakStep, s.valFinal]).toEqual([0.5, 0.9, 10, 0.7]);
    expect(s.trainFinal).toBeCloseTo(0.8);
    expect(s.stdDropStep).toBe(9); // steps 5-9: (0.4*2 + 0.05*3)/5 = 0.19 < 0.5 * 0.4 first at step 9
    expect(s.entropyDropStep).toBeNull();
    expect(s.echoWarningStep).toBe(10);
    expect(s.steps).toBe(12);
  });
});

describe('experiments: the cost estimate printed at start', () => {
  it('scales the StarPO-S step cost by the keep ratio and GRPO, and schedules runs on the pool', () => {
    expect(estimateStepSeconds(starpoS('sokoban'))).toBeCloseTo(STARPO_S_SECONDS.sokoban);
    const fl = estimateStepSeconds(vanilla('frozenlake', 'ppo'));
    expect(fl / STARPO_S_SECONDS.frozenlake).toBeCloseTo(2.4); // no filter: 4x the trajectories
    expect(estimateStepSeconds(vanilla('frozenlake', 'grpo'))).toBeCloseTo(0.7 * fl);
    const half = { ...starpoS('frozenlake'), set: ['filter.ratio=1', 'filter.ratio=0.5'] }; // the last --set wins
    expect(estimateStepSeconds(half) / STARPO_S_SECONDS.frozenlake).toBeCloseTo(1 + 1.4 / 3);
    expect(estimateStepSeconds({ name: 'starpo', arm: 'starpo', label: '', preset: 'echo-trap', set: [], steps: 1 })) // the lesson is Bandit
      .toBeCloseTo(estimateStepSeconds(vanilla('bandit', 'ppo')));
    // three runs of 60, 60 and 120 core-seconds: 4 core-minutes; 2 jobs: [60+120, 60] -> 3 min wall; 1 job: 4 min
    const runs = [60, 60, 120].map((sec) => ({ ...starpoS('bandit'), steps: sec / STARPO_S_SECONDS.bandit }));
    expect(estimateMinutes(runs, 2).coreMinutes).toBeCloseTo(4);
    expect(estimateMinutes(runs, 2).wallMinutes).toBeCloseTo(3);
    expect(estimateMinutes(runs, 1).wallMinutes).toBeCloseTo(4);
  });
});

describe('experiments: SVG line chart', () => {
  it('draws one polyline per non-empty series, a legend entry per series, and in-range markers', () => {
    const svg = lineChartSvg({
      title: 'A <b> & c',
      yLabel: 'success',
      series: [
        {
          label: 'one',
          points: [
            [0, 0],
            [10, 1],
          ],
        },
        {
          label: 'two',
          points: [
            [0, 0.5],
            [5, 0.2],
            [10, 0.1],
          ],
        },
        { label: 'empty', points: [] },
      ],
      markers: [
        { step: 5, label: 'warn' },
        { step: 99, label: 'out of range' },
      ],
    });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/class="series"/g)?.length).toBe(2);
    expect(svg.match(/class="marker"/g)?.length).toBe(1);
    expect(svg).toContain('A &lt;b&gt; &amp; c');
    expect(svg).toContain('>empty</text>');
    expect(svg).not.toContain('NaN');
  });

  it('puts x ticks on whole steps only when the steps are whole', () => {
    const xTickLabels = (svg: string) => [...svg.matchAll(/text-anchor="middle">([^<]+)<\/text>/g)].map((m) => m[1]);
    const whole = lineChartSvg({
      title: 't',
      yLabel: 'y',
      series: [
        {
          label: 'a',
          points: [
            [0, 0],
            [1, 1],
            [2, 0],
          ],
        },
      ],
    });
    expect(xTickLabels(whole)).toEqual(['0', '1', '2', 'training step', 'y']); // ticks, then the axis labels
    const frac = lineChartSvg({
      title: 't',
      yLabel: 'y',
      series: [
        {
          label: 'a',
          points: [
            [0, 0],
            [0.5, 1],
            [2, 0],
          ],
        },
      ],
    });
    expect(xTickLabels(frac)).toContain('0.5');
  });

  it('picks round ticks covering the range', () => {
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(0, 150)).toEqual([0, 50, 100, 150]);
    expect(niceTicks(2, 2)).toEqual([2]);
  });
});

describe('experiments: PNG through Chromium', () => {
  it("rasterises a chart to a PNG of the chart's size", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exp-png-'));
    const file = path.join(dir, 'chart.png');
    await writePngs([
      {
        file,
        svg: lineChartSvg({
          title: 't',
          yLabel: 'y',
          series: [
            {
              label: 'a',
              points: [
                [0, 0],
                [1, 1],
              ],
            },
          ],
          width: 400,
          height: 300,
        }),
      },
    ]);
    const png = fs.readFileSync(file);
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([400, 300]); // IHDR width, height
    fs.rmSync(dir, { recursive: true });
  }, 60_000);
});

describe('experiments: --recipe flags of the lab scripts', () => {
  it('reads numbers, lists, objects and booleans, keeping "=" inside a value', () => {
    expect(
      parseRecipeOverrides([
        'steps=3000',
        'lr=1e-3',
        'actionsPerAnswer=[1,1]',
        'trainOnPrompt=true',
        'playedAs=bandit-tiny',
        'laterCycles=[{"episodes":8,"imperfectFraction":0,"steps":2,"lr":0.001,"warmupSteps":1,"seed":2}]',
      ]),
    ).toEqual({
      steps: 3000,
      lr: 1e-3,
      actionsPerAnswer: [1, 1],
      trainOnPrompt: true,
      playedAs: 'bandit-tiny',
      laterCycles: [{ episodes: 8, imperfectFraction: 0, steps: 2, lr: 0.001, warmupSteps: 1, seed: 2 }],
    });
    expect(parseRecipeOverrides(['playedAs=a=b'])).toEqual({ playedAs: 'a=b' });
    expect(() => parseRecipeOverrides(['steps'])).toThrow(/key=value, got 'steps'/);
  });
});
