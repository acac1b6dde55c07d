import { describe, expect, it } from 'vitest';
import {
  countWords,
  crossStateShared,
  distinctN,
  diversityTokens,
  extractThink,
  pairwiseDiversity,
  reasoningMetrics,
  reasoningSamplesFromTrajectories,
  uniqueFraction,
} from '../../../src/metrics/reasoning';

describe('reasoning length', () => {
  it('counts words and extracts the think block', () => {
    expect(countWords('  a b\n c ')).toBe(3);
    expect(countWords('   ')).toBe(0);
    expect(extractThink('<think> go left\nthen up </think><answer>Left || Up</answer>')).toBe('go left\nthen up');
    expect(extractThink('<think>a</think> trailing <think>b</think>')).toBe('a');
    expect(extractThink('<think>never closed <answer>Left</answer>')).toBeNull();
    expect(extractThink('no tags at all')).toBeNull();
  });

  it('averages over turns with a think block, with a pluggable token counter', () => {
    const samples = [{ think: 'a b' }, { think: null }, { think: 'c d e f' }];
    const m = reasoningMetrics(samples);
    expect(m['reasoning_length/mean']).toBe(3); // (2 + 4) / 2
    expect(m['reasoning/valid_thinking_rate']).toBeCloseTo(2 / 3, 12);
    const chars = reasoningMetrics(samples, { countTokens: (t) => t.length });
    expect(chars['reasoning_length/mean']).toBe(5); // (3 + 7) / 2
    expect(() => reasoningMetrics(samples, { countTokens: () => -1 })).toThrow(/token counter/);
    const empty = reasoningMetrics([]);
    expect(empty['reasoning_length/mean']).toBeNaN();
    expect(empty['reasoning/valid_thinking_rate']).toBeNaN();
  });
});

describe('reasoning diversity', () => {
  it('tokenizes into lower-cased words and punctuation', () => {
    expect(diversityTokens('Push the box, then Up.')).toEqual(['push', 'the', 'box', ',', 'then', 'up', '.']);
  });

  it('computes distinct-n on tiny texts (hand-computed)', () => {
    // unigrams a b c a b d: 4 distinct of 6; bigrams ab bc ab bd: 3 of 4; trigrams abc abd: 2 of 2
    expect(distinctN(['a b c', 'a b d'], 1)).toBeCloseTo(4 / 6, 12);
    expect(distinctN(['a b c', 'a b d'], 2)).toBe(0.75);
    expect(distinctN(['a b c', 'a b d'], 3)).toBe(1);
    // n-grams never cross text boundaries: "c a" is not a bigram here
    expect(distinctN(['a b c', 'c a'], 2)).toBe(1);
    expect(distinctN(['a'], 2)).toBeNaN();
    expect(() => distinctN(['a'], 0)).toThrow(/n-gram order/);
  });

  it('counts unique think strings after whitespace normalisation', () => {
    expect(uniqueFraction(['a b', ' a  b\n', 'b'])).toBeCloseTo(2 / 3, 12);
    expect(uniqueFraction([])).toBeNaN();
  });

  it('pairwise diversity is 1 - mean bigram Jaccard (hand-computed)', () => {
    expect(pairwiseDiversity(['a b c', 'a b c'])).toBe(0);
    expect(pairwiseDiversity(['a b c', 'x y z'])).toBe(1);
    // {ab, bc} vs {ab, bd}: 1 shared of 3 -> similarity 1/3
    expect(pairwiseDiversity(['a b c', 'a b d'])).toBeCloseTo(2 / 3, 12);
    // three texts: pairs (1,2)=1/3, (1,3)=0, (2,3)=0 -> mean similarity 1/9
    expect(pairwiseDiversity(['a b c', 'a b d', 'x y'])).toBeCloseTo(1 - 1 / 9, 12);
    // texts shorter than n compare as whole texts
    expect(pairwiseDiversity(['ok', 'ok'])).toBe(0);
    expect(pairwiseDiversity(['ok', 'no'])).toBe(1);
    expect(pairwiseDiversity(['only one'])).toBeNaN();
  });

  it('measures reasoning shared across different inputs', () => {
    const samples = [
      { stateKey: 's1', think: 'X' },
      { stateKey: 's2', think: 'X' },
      { stateKey: 's3', think: 'Y' },
      { stateKey: 's3', think: 'Y' }, // same reasoning for the same input is not input-independence
    ];
    expect(crossStateShared(samples)).toBe(0.5);
    expect(crossStateShared([])).toBeNaN();
  });

  it('scores an echoed batch near 0 and a diverse batch high', () => {
    const states = ['#P_O#', '#_PO#', '#O_P#', '#PO_#', '#_OP#', '#OP_#', '#P__O', '#__PO'];
    const diverse = [
      'The box is right of me, so I push it right twice.',
      'Target sits left; I should walk around the box first.',
      'Moving up clears the wall and opens a path down.',
      'I am stuck against the corner; pushing left would deadlock.',
      'Two steps down put the box on the goal square.',
      'The goal is above, going up then right seems safest.',
      'Avoid the hole at the bottom row and head east.',
      'Left is blocked by a wall, try down and then right.',
    ];
    const echo = 'I will move to the target.';
    const diverseM = reasoningMetrics(diverse.map((think, i) => ({ think, stateKey: states[i] })));
    const echoM = reasoningMetrics(states.map((stateKey) => ({ think: echo, stateKey })));

    expect(echoM['reasoning/pairwise_diversity']).toBe(0);
    expect(echoM['reasoning/unique_fraction']).toBe(1 / 8);
    expect(echoM['reasoning/cross_state_shared']).toBe(1);
    expect(echoM['reasoning/distinct_2']).toBeCloseTo(1 / 8, 12); // every bigram repeated 8 times
    expect(echoM['reasoning/distinct_1']).toBeLessThanOrEqual(1 / 8);

    expect(diverseM['reasoning/pairwise_diversity']).toBeGreaterThan(0.8);
    expect(diverseM['reasoning/unique_fraction']).toBe(1);
    expect(diverseM['reasoning/cross_state_shared']).toBe(0);
    expect(diverseM['reasoning/distinct_2']).toBeGreaterThan(0.8);
    expect(diverseM['reasoning/distinct_3']).toBeGreaterThan(diverseM['reasoning/distinct_1']);
  });

  it('builds samples from agent trajectories', () => {
    const trajectories = [
      {
        groupId: 0,
        turns: [
          { turn: 1, state: 'S0', think: 'go up', formatOk: true },
          { turn: 2, state: 'S1', think: '', formatOk: false },
        ],
      },
      { groupId: 1, turns: [{ turn: 1, state: 'S9', think: 'go left', formatOk: true }] },
    ];
    expect(reasoningSamplesFromTrajectories(trajectories)).toEqual([
      { think: 'go up', stateKey: 'S0' },
      { think: null, stateKey: 'S1' },
      { think: 'go left', stateKey: 'S9' },
    ]);
    expect(reasoningSamplesFromTrajectories(trajectories, { turns: 'first', stateKey: 'group' })).toEqual([
      { think: 'go up', stateKey: 0 },
      { think: 'go left', stateKey: 1 },
    ]);
  });
});
