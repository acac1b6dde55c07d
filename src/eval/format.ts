// The scorecard as a plain-text table for the terminal and the docs (the JSON holds the same numbers, unrounded).
import type { Comparison, Scorecard, SuiteScore } from './scorecard';

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-');
const num = (x: number, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
const signed = (x: number, digits = 1) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(digits)}` : '-');

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function suiteRow(s: SuiteScore): string[] {
  return [
    s.suite,
    s.kind,
    `${pct(s.success.rate)} [${pct(s.success.lo)}, ${pct(s.success.hi)}]`,
    pct(s.optimum),
    pct(s.passAtK),
    num(s.meanReward),
    num(s.stepEfficiency),
    pct(s.actionValidity),
    pct(s.formatErrorRate),
    num(s.reasoningLength, 1),
    num(s.diversity.distinct2),
    num(s.diversity.pairwise),
  ];
}

/** Grounding columns of one suite ('-' where undefined, and in scorecards written before the field existed). */
function groundingRow(s: SuiteScore): string[] {
  const g = s.grounding;
  return [
    s.suite,
    pct(g?.rate ?? NaN),
    pct(g?.blind ?? NaN),
    num(g?.claimsPerTurn ?? NaN),
    pct(g?.answerAgreement ?? NaN),
  ];
}

/** The scorecard table, a legend line, and (with a comparison) the deltas against the baseline. */
export function formatScorecard(card: Scorecard, comparison?: Comparison): string {
  const k = card.protocol.k;
  const unit = card.suites[0]?.lengthUnit ?? 'words';
  const out: string[] = [];
  out.push(`scorecard of ${card.policy}`);
  out.push(
    `protocol: ${card.protocol.episodes} seeds from ${card.protocol.baseSeed} x ${k} rollout(s), temperature ${card.protocol.temperature}, ` +
      `sampling seed ${card.protocol.seed}; up to ${card.agent.maxTurn} turn(s), ${card.agent.maxActionsPerTurn} action(s) per turn`,
  );
  out.push('');
  out.push(
    table(
      [
        'suite',
        'kind',
        'success [95% CI]',
        'optimum',
        `pass@${k}`,
        'reward',
        'step eff',
        'valid act',
        'format err',
        `think ${unit}`,
        'distinct-2',
        'pairwise div',
      ],
      card.suites.map(suiteRow),
    ),
  );
  out.push('');
  out.push(
    'success: goal reached within the action budget (95% Wilson interval over episodes)',
    'optimum: expected success of the best possible agent on these seeds under this protocol (answers played blind)',
    'step eff: optimal / used actions of successful episodes (BFS solver / FrozenLake planner optimum)',
    'valid act: parsed actions that name an env action; format err: turns without <think>..</think><answer>..</answer>',
    'distinct-2: distinct reasoning bigrams / all bigrams, pooled over turns (an echo policy scores 1/turns)',
    "pairwise div: 1 - mean Jaccard similarity of two turns' reasoning bigrams (an echo policy scores 0)",
  );
  // A second table: the first one already fills a wide terminal.
  out.push('');
  out.push('is the reasoning about the state? (checkable claims in <think>, src/metrics/grounding.ts)');
  out.push(table(['suite', 'grounding', 'state-blind', 'claims/turn', 'answer agrees'], card.suites.map(groundingRow)));
  out.push('');
  out.push(
    'grounding: claims true of the observation / checkable claims; state-blind: the same claims checked against',
    'another state of the suite (the chance level); answer agrees: the choice the reasoning names = the answer',
  );
  if (comparison) {
    out.push('');
    out.push(`against baseline ${comparison.baseline} (current - baseline):`);
    out.push(
      table(
        ['suite', 'success (pts)', `pass@${k} (pts)`, 'reward', 'step eff', 'format err (pts)', 'distinct-2'],
        comparison.deltas.map((d) => [
          d.suite,
          signed(d.successPoints),
          signed(d.passAtKPoints),
          signed(d.meanReward, 2),
          signed(d.stepEfficiency, 2),
          signed(d.formatErrorPoints),
          signed(d.distinct2, 2),
        ]),
      ),
    );
    if (comparison.missingInBaseline.length)
      out.push(`not in the baseline: ${comparison.missingInBaseline.join(', ')}`);
  }
  return out.join('\n') + '\n';
}
