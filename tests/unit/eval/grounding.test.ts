// The scorecard's grounding columns: the training metrics reasoning/grounding* (src/metrics/grounding.ts) over a
// suite's played turns. Checked three ways: hand-built policies whose claims are known to be true or false, the
// shipped bandit-tiny warm start (the scorecard's numbers equal groundingMetrics computed directly over the same
// episodes), and a scorecard JSON written before the columns existed (it loads and shows '-').
import { beforeAll, describe, expect, it } from 'vitest';
import { makeEnv } from '../../../envs/index';
import type { Trajectory } from '../../../src/agent/index';
import {
  formatScorecard,
  modelScorecardPolicy,
  parseScorecardJson,
  runScorecard,
  scorecardToJson,
  type AgentFormat,
  type EvalProtocol,
  type EvalSuite,
  type ScorecardPolicy,
} from '../../../src/eval/index';
import {
  agentFormatFromConfig,
  loadActor,
  protocolFromConfig,
  resolveCheckpoint,
  suitesFromConfig,
} from '../../../src/eval/load';
import { groundingMetrics, groundingTurnsOf } from '../../../src/metrics/grounding';
import { initBackend } from '../../../src/model/backend';
import { agentFormat } from '../agentFormat';

const FORMAT: AgentFormat = agentFormat({ maxTurn: 3, maxActionsPerTurn: 1 });
const PROTOCOL: EvalProtocol = { episodes: 12, k: 1, baseSeed: 123, temperature: 0.5, seed: 0, batchSize: 4 };
const SOKOBAN: EvalSuite = {
  name: 'SimpleSokoban',
  kind: 'held-out',
  tag: 'SimpleSokoban',
  description: 'SimpleSokoban',
};

/** Where the player stands in a rendered Sokoban grid (row, column from the top-left wall). */
function playerCell(grid: string): [number, number] {
  const rows = grid.split('\n');
  const r = rows.findIndex((row) => /[PS]/.test(row));
  return [r, rows[r].search(/[PS]/)];
}

/** States where the player is, shifted by `offset` rows (0 = the truth), then names the move it answers. */
function positionPolicy(name: string, offset: number): ScorecardPolicy {
  return {
    name,
    generateFn: (ctx) => async (prompts) => {
      const active = ctx.manager.activeRollouts();
      expect(active).toHaveLength(prompts.length);
      return active.map((rollout) => {
        const [r, c] = playerCell(ctx.manager.entries[rollout.envId].env.render());
        return `I am at (${r + offset}, ${c}). I go Up.</think><answer>Up</answer>`;
      });
    },
  };
}

describe('scorecard grounding: policies with known claims', () => {
  it('true positions score 1 against a lower state-blind rate; positions one row off score 0', async () => {
    const played: Trajectory[] = [];
    const card = await runScorecard(positionPolicy('honest', 0), [SOKOBAN], PROTOCOL, FORMAT, {
      onEpisodes: (_s, t) => void played.push(...t),
    });
    const honest = card.suites[0].grounding!;
    // The same state-blind draw as groundingMetrics over all the suite's turns, with the eval seed.
    const env = makeEnv(SOKOBAN.tag);
    expect(honest.blind).toBe(
      groundingMetrics(
        groundingTurnsOf(played, () => env),
        PROTOCOL.seed,
      )['reasoning/grounding_blind'],
    );
    expect(honest.rate).toBe(1);
    expect(honest.claimsPerTurn).toBe(1);
    expect(honest.answerAgreement).toBe(1); // "I go Up" and the answer Up
    // Another level's player rarely stands on the same cell: the chance level is far below the truth.
    expect(honest.blind).toBeLessThan(0.5);
    const liar = (await runScorecard(positionPolicy('liar', 1), [SOKOBAN], PROTOCOL, FORMAT)).suites[0].grounding!;
    expect(liar.rate).toBe(0);
    expect(liar.claimsPerTurn).toBe(1);
  });

  it('reasoning without checkable claims or a named choice: claims/turn 0, grounding and agreement undefined', async () => {
    const mute: ScorecardPolicy = {
      name: 'mute',
      generateFn: () => async (prompts) => prompts.map(() => 'Hmm.</think><answer>Up</answer>'),
    };
    const card = await runScorecard(mute, [SOKOBAN], { ...PROTOCOL, episodes: 2 }, FORMAT);
    const g = card.suites[0].grounding!;
    expect(g.claimsPerTurn).toBe(0);
    expect(g.rate).toBeNaN();
    expect(g.blind).toBeNaN();
    expect(g.answerAgreement).toBeNaN();
    const json = scorecardToJson(card);
    expect(json).toContain('"answerAgreement": null');
    expect(formatScorecard(parseScorecardJson(json))).toMatch(/\nSimpleSokoban\s+-\s+-\s+0\.00\s+-\n/);
  });
});

describe('scorecard grounding of the shipped bandit-tiny warm start', () => {
  beforeAll(async () => {
    await initBackend('cpu');
  });

  it('equals groundingMetrics computed directly over the same played episodes', async () => {
    const target = resolveCheckpoint('public/warmstart/bandit-tiny');
    const { model, tokenizer } = await loadActor(target.modelDir);
    const played = new Map<string, Trajectory[]>();
    const protocol = protocolFromConfig(target.config, { episodes: 12, batchSize: 5 }); // 3 batches per suite
    try {
      const policy = modelScorecardPolicy('bandit-tiny', model, tokenizer, {
        maxNewTokens: target.config.rollout.maxNewTokens,
      });
      const suites = suitesFromConfig(target.config);
      const card = await runScorecard(policy, suites, protocol, agentFormatFromConfig(target.config), {
        onEpisodes: (suite, trajectories) =>
          void played.set(suite.name, [...(played.get(suite.name) ?? []), ...trajectories]),
      });
      for (const [i, s] of card.suites.entries()) {
        // The suite's envs rebuilt from its tag and config: the same action names and arm names as the played ones.
        const env = makeEnv(suites[i].tag, suites[i].config);
        const direct = groundingMetrics(
          groundingTurnsOf(played.get(s.suite)!, () => env),
          protocol.seed,
        );
        expect(s.grounding, s.suite).toEqual({
          rate: direct['reasoning/grounding'],
          blind: direct['reasoning/grounding_blind'],
          claimsPerTurn: direct['reasoning/grounding_claims'],
          answerAgreement: direct['reasoning/answer_agreement'],
        });
      }
      // The warm start talks about its arms in the held-out suite: something was checked there.
      const bandit = card.suites.find((s) => s.suite === 'Bandit')!.grounding!;
      expect(bandit.claimsPerTurn).toBeGreaterThan(0);
      expect(bandit.rate).toBeGreaterThanOrEqual(0);
      expect(bandit.answerAgreement).toBeGreaterThanOrEqual(0);
    } finally {
      model.dispose();
    }
  }, 120_000);
});

describe('scorecards written before the grounding columns', () => {
  it("load, and show '-' in the grounding table", () => {
    const old = {
      format: 'ragen-ts-scorecard/1',
      policy: 'old-run',
      protocol: PROTOCOL,
      agent: FORMAT,
      suites: [
        {
          suite: 'Bandit',
          kind: 'held-out',
          tag: 'Bandit',
          description: 'Bandit',
          seeds: 4,
          k: 1,
          episodes: 4,
          success: { rate: 0.5, lo: 0.15, hi: 0.85, successes: 2 },
          optimum: 1,
          passAtK: 0.5,
          meanReward: 0.2,
          meanScore: 0.2,
          stepEfficiency: 1,
          actionsPerSuccess: 1,
          optimalActions: 1,
          actionValidity: 1,
          formatErrorRate: 0,
          meanTurns: 1,
          reasoningLength: 12,
          lengthUnit: 'tokens',
          diversity: { distinct1: 0.5, distinct2: 0.6, uniqueFraction: 1, pairwise: 0.8 },
        },
      ],
    };
    const card = parseScorecardJson(JSON.stringify(old), 'old.json');
    expect(card.suites[0].grounding).toBeUndefined();
    const text = formatScorecard(card);
    expect(text).toMatch(/suite\s+grounding\s+state-blind\s+claims\/turn\s+answer agrees/);
    expect(text).toMatch(/\nBandit\s+-\s+-\s+-\s+-\n/);
  });
});
