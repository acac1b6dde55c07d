// How often the Echo Trap lesson shows on training seeds nobody tuned it on: the fresh-seed table that the
// lesson page shows next to the recording. The file is public/lessons/<preset>/fresh-seeds.json, written by
// `npx tsx experiments/lab/lesson-verdict.ts runs/lesson-fresh2 --json public/lessons/echo-trap/fresh-seeds.json`
// from real runs; the page only reads it.
import { z } from 'zod';
import { lessonFolder } from './lesson';

const step = z.number().int().nonnegative().nullable();
const fraction = z.number().min(0).max(1);

/**
 * One arm's curves on one seed, every `every` steps (5 in the lab scripts): training success as its 5-step trailing
 * mean (the table's smoothing) and, where the run measured it, the first-turn MI (nats; null at a step without a
 * measurement). The page draws every seed at once from these (freshSeedCurves.ts).
 */
const ArmSeries = z
  .strictObject({
    step: z.array(z.number().int().nonnegative()).min(1),
    success: z.array(fraction),
    mi: z.array(z.number().nullable()).optional(),
  })
  .refine((a) => a.success.length === a.step.length && (a.mi === undefined || a.mi.length === a.step.length), {
    message: 'step, success and mi must have one value per step',
  })
  .refine((a) => a.step.every((s, i) => i === 0 || s > a.step[i - 1]), { message: 'steps must increase' });

const FreshSeedRow = z.strictObject({
  seed: z.number().int().nonnegative(),
  vanilla: z.strictObject({
    start: fraction,
    peak: fraction,
    peakStep: z.number().int().nonnegative(),
    final: fraction,
    /** First step the early warning fired (replayed by the detector of the page's commit). */
    warningStep: step,
    /** First step the 5-step mean fell to half its best so far or less. */
    collapseStep: step,
  }),
  starpoS: z.strictObject({ peak: fraction, final: fraction, warningStep: step, convergedStep: step }),
  /**
   * The mechanism lesson's input-dependence signal (first-turn MI, nats; null where no measurement fell in the
   * window): vanilla's over steps 10-30 and over the 20 steps before its collapse (its last 20 when none), StarPO-S's
   * over steps 10-30 and its last 20 (experiments/lab/lesson-mi-verdict.ts).
   */
  mi: z
    .strictObject({
      vanillaEarly: z.number().nullable(),
      vanillaLate: z.number().nullable(),
      starpoSEarly: z.number().nullable(),
      starpoSLate: z.number().nullable(),
    })
    .optional(),
  /** Both arms' curves, as the lab scripts write them (optional: a table without them shows no curves). */
  series: z.strictObject({ vanilla: ArmSeries, starpoS: ArmSeries }).optional(),
  /**
   * Which of the table's conditions failed; empty = the lesson showed. The outcome lesson's: improves, warns,
   * collapses, holds, endsAbove. The mechanism lesson's: miFalls (vanilla collapsed after its MI fell below half),
   * miStays (StarPO-S's MI stayed at half or more).
   */
  failed: z.array(z.enum(['improves', 'warns', 'collapses', 'holds', 'endsAbove', 'miFalls', 'miStays'])),
});

export const FreshSeedTableSchema = z.strictObject({
  format: z.literal(1),
  preset: z.string().min(1),
  /** What a row's `failed` judges: the outcome (vanilla collapses after the warning while StarPO-S holds; the
   *  default) or the mechanism (vanilla's MI falls before its success while StarPO-S's stays up). */
  criteria: z.enum(['outcome', 'mechanism']).default('outcome'),
  /** The commit at which these seeds were named, before any was trained. */
  seedsNamedAt: z.string().min(7),
  /** The commit whose preset was run on them. */
  presetCommit: z.string().min(7),
  command: z.string().min(1),
  date: z.string().min(1),
  rows: z.array(FreshSeedRow).min(1),
});

export type FreshSeedTable = z.output<typeof FreshSeedTableSchema>;
export type FreshSeedRow = FreshSeedTable['rows'][number];

/** Checks a fresh-seed table; throws one line naming the file and the first bad field. */
export function parseFreshSeedTable(raw: unknown, source = 'fresh-seeds.json'): FreshSeedTable {
  const result = FreshSeedTableSchema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new Error(`${source}: ${issue.path.join('.') || '(top level)'}: ${issue.message}`);
}

/** Each condition of a row's `failed`, in words a class reads (the code stays in the cell's title). */
export const FAILED_WORDS: Record<FreshSeedRow['failed'][number], string> = {
  improves: 'vanilla did not improve',
  warns: 'no warning before vanilla’s fall',
  collapses: 'vanilla did not collapse',
  holds: 'StarPO-S did not hold',
  endsAbove: 'StarPO-S did not end 20 points above vanilla',
  miFalls: 'vanilla’s reasoning did not stop reading the lake before its fall',
  miStays: 'StarPO-S’s reasoning stopped reading the lake',
};

/**
 * Each arm counted on its own, as the lesson's rates are stated (the outcome lesson only): vanilla's runs that
 * collapsed after the warning, StarPO-S's that held and ended 20 points above vanilla on the same seed.
 */
export function armCountsOf(table: FreshSeedTable): { vanilla: number; starpoS: number; runs: number } {
  const ok = (r: FreshSeedRow, conditions: FreshSeedRow['failed']) => !conditions.some((c) => r.failed.includes(c));
  return {
    vanilla: table.rows.filter((r) => ok(r, ['warns', 'collapses'])).length,
    starpoS: table.rows.filter((r) => ok(r, ['holds', 'endsAbove'])).length,
    runs: table.rows.length,
  };
}

/** How many seeds showed the whole lesson. */
export function lessonCount(table: FreshSeedTable): number {
  return table.rows.filter((r) => r.failed.length === 0).length;
}

/** The table shipped with the site, or null when there is none (the page then says nothing about robustness). */
export async function fetchFreshSeedTable(base: string, preset: string): Promise<FreshSeedTable | null> {
  const file = `${lessonFolder(preset)}/fresh-seeds.json`;
  const response = await fetch(new URL(file, base));
  // A static host may answer a missing file with its index page (vite preview, most SPA hosts): also "none".
  if (response.status === 404 || response.headers.get('content-type')?.includes('text/html')) return null;
  if (!response.ok) throw new Error(`${file}: HTTP ${response.status}`);
  let raw: unknown;
  try {
    raw = JSON.parse(await response.text());
  } catch (err) {
    throw new Error(`${file} is not valid JSON (${(err as Error).message})`, { cause: err });
  }
  return parseFreshSeedTable(raw, file);
}
