// The frame every experiment script shares: flags, training the runs, summaries, the findings JSON and the plots.
//
//   npx tsx experiments/<script>.ts [--jobs N] [--steps N] [--backend wasm|webgpu|cpu] [--minutes M] [--no-plots]
//                                   [--smoke] [--out DIR]
// writes docs/findings/<name>.json (every run's config, per-step series and summary, plus the script's own numbers)
// and docs/findings/<name>-<chart>.png. `npx tsx experiments/plot.ts <name>` redraws the PNGs from the JSON alone.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import {
  KEYS,
  readMetrics,
  series,
  summarise,
  trainTag,
  type RunSummary,
  type Series,
  movingAverage,
} from './analysis';
import { lineChartSvg, type ChartMarker, type ChartSpec } from './chart';
import { estimateMinutes } from './configs';
import {
  defaultJobs,
  evaluate,
  existingOutcome,
  trainAll,
  type RunOutcome,
  type RunSpec,
  type SuiteScore,
} from './runs';

export const REPO = path.resolve(import.meta.dirname, '../..');
export const FINDINGS_DIR = path.join(REPO, 'docs', 'findings');

/** A chart of one metric over training steps, one line per run. `{tag}` in the key stands for the run's env tag. */
export interface ChartDef {
  id: string;
  title: string;
  yLabel: string;
  metric: string;
  /** Trailing moving average over this many steps (training-batch metrics are noisy). */
  smooth?: number;
  /** Only these runs (names); default all. */
  runs?: string[];
  /** Draw the echo-trap warning / std-drop steps as markers. */
  markers?: boolean;
  yMin?: number;
  yMax?: number;
}

export interface ExperimentContext {
  outcomes: RunOutcome[];
  backend: string;
  smoke: boolean;
  episodes: number;
  evalDir: string;
  log: (line: string) => void;
  /** `ragen eval` of a checkpoint, cached per label under the runs root. */
  evaluate: (checkpoint: string, label: string) => Promise<SuiteScore[]>;
}

export interface ExperimentDef {
  name: string;
  title: string;
  /** What the paper reports (spec section cited). */
  paper: string;
  /** How this experiment departs from the paper, and why. */
  departures: string;
  runs: RunSpec[];
  /** Run directories, relative to the repository (default runs/experiments, shared by the experiments). */
  root?: string;
  charts: ChartDef[];
  /** Estimated minutes of the `ragen eval` calls in `after` (run one at a time after training), for the estimate. */
  evalMinutes?: number;
  /** Extra numbers (evaluations, tables) computed after training; stored under "extra" in the JSON. */
  after?: (ctx: ExperimentContext) => Promise<Record<string, unknown>>;
}

export interface FindingsRun {
  name: string;
  label: string;
  preset: string;
  set: string[];
  steps: number;
  stepsDone: number;
  complete: boolean;
  backend: string;
  seconds: number;
  summary: RunSummary;
  series: Record<string, Series>;
}

export interface FindingsJson {
  experiment: string;
  title: string;
  command: string;
  date: string;
  machine: string;
  paper: string;
  departures: string;
  /** The estimate printed at the start (from configs.ts's per-step costs; every run trained, none reused). */
  estimate?: { coreMinutes: number; wallMinutes: number; jobs: number };
  runs: FindingsRun[];
  extra: Record<string, unknown>;
}

/** The metric keys a run's JSON keeps: every chart's, plus success, std, entropy, grad norm. */
function keptKeys(def: ExperimentDef, tag: string | null): string[] {
  const keys = new Set<string>([KEYS.std, KEYS.entropy, KEYS.gradNorm, KEYS.reasoning, 'echo_trap/warning']);
  if (tag) for (const k of [`val-env/${tag}/success`, `train/${tag}/success`]) keys.add(k);
  for (const c of def.charts) keys.add(tag ? c.metric.replace('{tag}', tag) : c.metric);
  keys.add('timing_s/step');
  return [...keys];
}

export function chartSpecs(def: ExperimentDef, data: FindingsJson): { id: string; spec: ChartSpec }[] {
  return def.charts.map((c) => {
    const runs = data.runs.filter((r) => !c.runs || c.runs.includes(r.name));
    const markers: ChartMarker[] = [];
    const lines = runs.map((r) => {
      const key = r.summary.tag ? c.metric.replace('{tag}', r.summary.tag) : c.metric;
      const raw = r.series[key] ?? [];
      if (c.markers && r.summary.echoWarningStep !== null)
        markers.push({
          step: r.summary.echoWarningStep,
          label: `${r.label}: echo warning${r.summary.echoWarningSignal ? ` (${r.summary.echoWarningSignal})` : ''}`,
        });
      return {
        label: r.label + (r.complete ? '' : ` (${r.stepsDone}/${r.steps})`),
        points: c.smooth ? movingAverage(raw, c.smooth) : raw,
      };
    });
    return {
      id: c.id,
      spec: {
        title: c.title,
        yLabel: c.yLabel + (c.smooth ? ` (${c.smooth}-step mean)` : ''),
        series: lines,
        markers,
        yMin: c.yMin,
        yMax: c.yMax,
      },
    };
  });
}

export async function renderPlots(def: ExperimentDef, data: FindingsJson, dir: string): Promise<string[]> {
  const { writePngs } = await import('./png'); // Playwright only when plotting
  const charts = chartSpecs(def, data).map(({ id, spec }) => ({
    file: path.join(dir, `${def.name}-${id}.png`),
    svg: lineChartSvg(spec),
  }));
  await writePngs(charts);
  return charts.map((c) => c.file);
}

function machine(): string {
  return `${os.cpus().length} x ${os.cpus()[0]?.model.trim() ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`;
}

/** The flags every experiment script and experiments/all.ts take. */
export function withCommonOptions(program: Command): Command {
  return program
    .option('--jobs <n>', 'training runs at a time (default: the number of CPUs)', String(defaultJobs()))
    .option('--backend <name>', 'tfjs backend of every run and evaluation', 'wasm')
    .option('--minutes <m>', 'stop each run after this many minutes (its finished steps still count)')
    .option('--episodes <n>', 'initial states per eval suite', '32')
    .option('--smoke', 'plumbing check: 2 steps per run, 4 eval episodes, results under the runs directory')
    .option('--no-plots', 'skip the PNGs (redraw later with experiments/plot.ts)');
}

/** Runs an experiment from the command line (see the header for the flags). */
export async function runExperiment(def: ExperimentDef, argv = process.argv): Promise<void> {
  const program = withCommonOptions(new Command().name(`experiments/${def.name}.ts`).description(def.title))
    .option('--steps <n>', "override every run's training steps")
    .option('--out <dir>', 'run directories (default runs/experiments, runs/experiments-smoke with --smoke)')
    .option('--no-train', 'train nothing: summarise the run directories as they are (after experiments/all.ts)');
  program.parse(argv);
  const f = program.opts<{
    jobs: string;
    steps?: string;
    backend: string;
    minutes?: string;
    episodes: string;
    out?: string;
    smoke?: boolean;
    plots: boolean;
    train: boolean;
  }>();
  const smoke = !!f.smoke;
  const root = path.resolve(
    f.out ?? path.join(REPO, smoke ? `${def.root ?? 'runs/experiments'}-smoke` : (def.root ?? 'runs/experiments')),
  );
  const findingsDir = smoke ? path.join(root, 'findings') : FINDINGS_DIR;
  const steps = smoke ? 2 : f.steps ? Number(f.steps) : null;
  const episodes = smoke ? 4 : Number(f.episodes);
  const log = (line: string) => console.log(`[${def.name}] ${line}`);
  const runs = def.runs.map((r) => ({ ...r, steps: steps ?? r.steps }));

  log(`${def.title}: ${runs.length} runs, ${f.jobs} at a time, ${f.backend}, runs in ${path.relative(REPO, root)}`);
  const est = estimateMinutes(runs, Number(f.jobs));
  const evalMin = smoke ? (def.evalMinutes ?? 0) / 8 : (def.evalMinutes ?? 0);
  const estimate = {
    coreMinutes: Math.round(est.coreMinutes + evalMin),
    wallMinutes: Math.round(est.wallMinutes + evalMin),
    jobs: Number(f.jobs),
  };
  if (f.train)
    log(
      `estimate (quiet cores, wasm, nothing reused): ~${estimate.coreMinutes} core-minutes, ~${estimate.wallMinutes} min with ${f.jobs} job(s)` +
        (evalMin ? `, evals ~${evalMin.toFixed(0)} min included` : ''),
    );
  const started = Date.now();
  const outcomes = f.train
    ? await trainAll(runs, {
        root,
        jobs: Number(f.jobs),
        backend: f.backend,
        minutes: f.minutes ? Number(f.minutes) : null,
        extraSet: smoke ? ['trainer.testFreq=2'] : [],
        log,
      })
    : runs.map((spec) => existingOutcome(spec, root, f.backend));
  const evalDir = path.join(root, '_evals');
  const ctx: ExperimentContext = {
    outcomes,
    backend: f.backend,
    smoke,
    episodes,
    evalDir,
    log,
    evaluate: (checkpoint, label) =>
      evaluate(checkpoint, path.join(evalDir, `${label}-${episodes}.json`), { backend: f.backend, episodes, log }),
  };
  const extra = def.after ? await def.after(ctx) : {};

  const data: FindingsJson = {
    experiment: def.name,
    title: def.title,
    command: `npx tsx experiments/${def.name}.ts ${argv.slice(2).join(' ')}`.trim(),
    date: new Date().toISOString(),
    machine: machine(),
    paper: def.paper,
    departures: def.departures,
    estimate,
    runs: outcomes.map((o) => {
      const rows = readMetrics(o.dir);
      const tag = trainTag(rows);
      return {
        name: o.spec.name,
        label: o.spec.label,
        preset: o.spec.preset,
        set: o.spec.set,
        steps: o.spec.steps,
        stepsDone: o.stepsDone,
        complete: o.complete,
        backend: o.backend,
        seconds: o.seconds,
        summary: summarise(rows),
        series: Object.fromEntries(keptKeys(def, tag).map((k) => [k, series(rows, k)])),
      };
    }),
    extra,
  };
  fs.mkdirSync(findingsDir, { recursive: true });
  const jsonFile = path.join(findingsDir, `${def.name}.json`);
  fs.writeFileSync(jsonFile, JSON.stringify(data, null, 1) + '\n');
  log(`wrote ${path.relative(REPO, jsonFile)} (${((Date.now() - started) / 60000).toFixed(1)} min)`);
  if (f.plots) for (const file of await renderPlots(def, data, findingsDir)) log(`wrote ${path.relative(REPO, file)}`);
  for (const r of data.runs) {
    const s = r.summary;
    log(
      `${r.label.padEnd(28)} steps ${r.stepsDone}/${r.steps}  val ${pct(s.valStart)} -> peak ${pct(s.valPeak)} @${s.valPeakStep ?? '-'} -> final ${pct(s.valFinal)}  ` +
        `std drop @${s.stdDropStep ?? '-'}  entropy drop @${s.entropyDropStep ?? '-'}  echo warning @${s.echoWarningStep ?? '-'}${s.echoWarningSignal ? ` (${s.echoWarningSignal})` : ''}`,
    );
  }
}

export const pct = (v: number | null | undefined) => (v === null || v === undefined ? '-' : `${(v * 100).toFixed(1)}%`);

/** True when the calling module is the script being run (not imported by plot.ts). */
export const isMain = (metaUrl: string) =>
  process.argv[1] !== undefined && metaUrl === pathToFileURL(path.resolve(process.argv[1])).href;
