// Advantages for StarPO: token-level GAE with a critic (PPO), group normalisation of trajectory scores (GRPO), and
// GiGPO's optional step-level term (anchor-state groups of turns).
//
// How the trainer uses this file (spec §4.2 steps 2, 8, 9 and §4.3):
//   1. After a rollout, each trajectory is one re-tokenised sequence (shifted by one position, as RAGEN trains on
//      "responses" = input_ids[1:]) with a loss-mask row. The trainer reads the critic's values and the log-probs
//      back ONCE per step as plain rows (B x T is small), so everything here works on `Float32Array` rows.
//   2. PPO:  rewards = placeTerminalReward(rawScorePlusPenalty, mask)      (optionally minus reward-KL, see kl.ts)
//            { advantages, returns } = gae(rewards, values, mask, gamma, lam)
//            advantages = whiten(advantages, mask)                          (over ALL loss tokens of the batch)
//      The critic regresses `returns`; the actor uses the whitened `advantages`.
//   3. GRPO: scalars = grpoNormalize(scorePlusPenalty, groupIds, method)   (penalty added BEFORE normalising)
//            advantages = broadcastOverLossTokens(scalars, mask)           (no critic, no whitening)
//      In single_turn mode with algorithm.stepAdvantage (GiGPO), each turn sample's scalar is its trajectory's plus
//      weight x stepLevelAdvantages(...) of that turn: credit per turn, relative to other turns from the same state.
//   The rows are then turned into [B, T] tensors for losses.ts.
//
// Conventions shared by every function below:
//   - A batch is an array of rows, one row per trajectory, all positions of the shifted sequence.
//   - A mask row holds 1 on loss tokens and 0 elsewhere (any other value is an error).
//   - Positions outside the loss mask never influence a result: rewards and values found there are treated as 0
//     (RAGEN zeroes the critic's values outside the loss mask and only ever places rewards on loss tokens), and
//     outputs there are 0.
//   - Arithmetic is done in float64 and stored as float32.
import type { RenderedPrompt, Trajectory } from '../agent/index';

/** One row per trajectory; index t is position t of the shifted token sequence. */
export type TokenRows = readonly ArrayLike<number>[];

/** How GRPO turns a group's trajectory scores into advantages (RAGEN's `reward_normalization.method`). */
export type GrpoNormMethod = 'mean_std' | 'asym_clip' | 'mean' | 'identity';

/** RAGEN treats a group whose (unbiased) std is at or below this as having no signal: all zeros. Fixed, not eps. */
const ZERO_STD_THRESHOLD = 1e-6;

function checkMaskRow(mask: ArrayLike<number>, row: number): void {
  for (let t = 0; t < mask.length; t++) {
    const m = mask[t];
    if (m !== 0 && m !== 1)
      throw new Error(`loss mask row ${row} position ${t} is ${m}: a loss mask holds only 0 or 1`);
  }
}

function checkSameShape(name: string, rows: TokenRows, mask: TokenRows): void {
  if (rows.length !== mask.length) {
    throw new Error(
      `${name} has ${rows.length} rows but the loss mask has ${mask.length}: they must describe the same batch`,
    );
  }
  for (let i = 0; i < rows.length; i++) {
    if (rows[i].length !== mask[i].length) {
      throw new Error(`${name} row ${i} has length ${rows[i].length} but the loss mask row has ${mask[i].length}`);
    }
  }
}

function checkFinite(name: string, x: number, where: string): void {
  if (!Number.isFinite(x)) throw new Error(`${name} ${where} is ${x}: expected a finite number`);
}

/**
 * Generalised advantage estimation over the full shifted sequence, exactly as veRL's version that RAGEN runs
 * (spec §4.3): backward over EVERY position t (masked positions included, with their reward and value taken as 0),
 *   delta_t = r_t + gamma * V_{t+1} - V_t,   A_t = delta_t + gamma * lam * A_{t+1},   V beyond the end = 0,
 * and returns = A + V. Not whitened: call `whiten` next.
 *
 * With gamma = lam = 1 and a single reward R on the last loss token, A_t = R - V_t on every loss token (even across
 * the observation tokens between turns, whose values are 0), and every return is R.
 *
 * @param rewards per-token rewards (the terminal score from `placeTerminalReward`, minus any reward-KL)
 * @param values  the critic's per-token values V(s_t)
 * @param mask    the loss mask
 * @param gamma   discount, RAGEN default 1.0
 * @param lam     GAE lambda, RAGEN default 1.0
 */
export function gae(
  rewards: TokenRows,
  values: TokenRows,
  mask: TokenRows,
  gamma: number,
  lam: number,
): { advantages: Float32Array[]; returns: Float32Array[] } {
  if (!(gamma >= 0 && gamma <= 1)) throw new Error(`gae: gamma must be in [0, 1], got ${gamma}`);
  if (!(lam >= 0 && lam <= 1)) throw new Error(`gae: lambda must be in [0, 1], got ${lam}`);
  checkSameShape('gae: rewards', rewards, mask);
  checkSameShape('gae: values', values, mask);
  const advantages: Float32Array[] = [];
  const returns: Float32Array[] = [];
  for (let i = 0; i < mask.length; i++) {
    const m = mask[i];
    checkMaskRow(m, i);
    const T = m.length;
    const adv = new Float32Array(T);
    const ret = new Float32Array(T);
    let nextValue = 0; // V beyond the end of the sequence
    let nextAdv = 0;
    for (let t = T - 1; t >= 0; t--) {
      const r = m[t] === 1 ? rewards[i][t] : 0;
      const v = m[t] === 1 ? values[i][t] : 0;
      if (m[t] === 1) {
        checkFinite('gae: reward', r, `at row ${i} position ${t}`);
        checkFinite('gae: value', v, `at row ${i} position ${t}`);
      }
      const delta = r + gamma * nextValue - v;
      const a = delta + gamma * lam * nextAdv;
      // Outputs are reported on loss tokens only; the recursion itself still runs through masked positions.
      adv[t] = m[t] === 1 ? a : 0;
      ret[t] = m[t] === 1 ? a + v : 0;
      nextValue = v;
      nextAdv = a;
    }
    advantages.push(adv);
    returns.push(ret);
  }
  return { advantages, returns };
}

/** The mean of `rows` over all loss tokens of the batch (NaN when there is none): what the trainer logs. */
export function lossTokenMean(rows: TokenRows, mask: TokenRows): number {
  let s = 0,
    n = 0;
  rows.forEach((row, i) => {
    for (let j = 0; j < row.length; j++)
      if (mask[i][j]) {
        s += row[j];
        n++;
      }
  });
  return n ? s / n : NaN;
}

/**
 * Whitens advantages over all loss tokens of the batch (veRL's `masked_whiten` with its default shift_mean):
 * (x - masked mean) / sqrt(unbiased masked variance + 1e-8). Positions outside the mask come out as 0.
 * Needs at least two loss tokens (the unbiased variance divides by count - 1).
 */
export function whiten(values: TokenRows, mask: TokenRows, eps = 1e-8): Float32Array[] {
  checkSameShape('whiten: values', values, mask);
  let count = 0;
  let sum = 0;
  for (let i = 0; i < mask.length; i++) {
    checkMaskRow(mask[i], i);
    for (let t = 0; t < mask[i].length; t++) {
      if (mask[i][t] === 1) {
        checkFinite('whiten: value', values[i][t], `at row ${i} position ${t}`);
        count++;
        sum += values[i][t];
      }
    }
  }
  if (count < 2) {
    throw new Error(`whiten: the loss mask covers ${count} token(s); whitening needs at least 2 (unbiased variance)`);
  }
  const mean = sum / count;
  let sq = 0;
  for (let i = 0; i < mask.length; i++) {
    for (let t = 0; t < mask[i].length; t++) if (mask[i][t] === 1) sq += (values[i][t] - mean) ** 2;
  }
  const variance = sq / (count - 1);
  const scale = 1 / Math.sqrt(variance + eps);
  return mask.map((m, i) => {
    const out = new Float32Array(m.length);
    for (let t = 0; t < m.length; t++) out[t] = m[t] === 1 ? (values[i][t] - mean) * scale : 0;
    return out;
  });
}

/** Index of the last loss token of a mask row, or -1 when the row has none. */
export function lastLossToken(mask: ArrayLike<number>): number {
  for (let t = mask.length - 1; t >= 0; t--) if (mask[t] === 1) return t;
  return -1;
}

/**
 * Puts each trajectory's scalar reward R (sum of turn rewards plus format penalty) on its LAST LOSS TOKEN and 0
 * everywhere else (spec §3.5, `use_turn_scores=false`).
 *
 * Which token RAGEN uses: it left-pads the batch, writes R at index -1 of the unshifted sequence and then drops the
 * first position, so R sits on the last position of the shifted sequence: the target `\n` after the final
 * assistant `<|im_end|>`. That position is a loss token under both masking modes (assistant-only, and the paper's
 * "everything after the system prompt"), so "last loss token" is the same token, and it stays right when the
 * trainer pads on the right instead.
 */
export function placeTerminalReward(scores: readonly number[], mask: TokenRows): Float32Array[] {
  if (scores.length !== mask.length) {
    throw new Error(`placeTerminalReward: ${scores.length} scores for ${mask.length} trajectories`);
  }
  return mask.map((m, i) => {
    checkMaskRow(m, i);
    checkFinite('placeTerminalReward: score', scores[i], `of trajectory ${i}`);
    const last = lastLossToken(m);
    if (last < 0) throw new Error(`placeTerminalReward: trajectory ${i} has no loss token to carry its reward`);
    const row = new Float32Array(m.length);
    row[last] = scores[i];
    return row;
  });
}

/**
 * Spreads one scalar advantage per trajectory over that trajectory's loss tokens (veRL's GRPO outcome step with one
 * uid per sample, as RAGEN v1 runs it: the normalisation already happened in `grpoNormalize`).
 *
 * @param lengthWeight RAGEN's `grpo_advantage_length_weight` (default false): divide each trajectory's advantage by
 *   its loss-token count relative to the batch's mean count, so long trajectories do not dominate a token mean.
 */
export function broadcastOverLossTokens(
  scalars: readonly number[],
  mask: TokenRows,
  lengthWeight = false,
): Float32Array[] {
  if (scalars.length !== mask.length) {
    throw new Error(`broadcastOverLossTokens: ${scalars.length} advantages for ${mask.length} trajectories`);
  }
  const lengths = mask.map((m, i) => {
    checkMaskRow(m, i);
    let n = 0;
    for (let t = 0; t < m.length; t++) n += m[t];
    return n;
  });
  const meanLength = lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length);
  return mask.map((m, i) => {
    checkFinite('broadcastOverLossTokens: advantage', scalars[i], `of trajectory ${i}`);
    const a = lengthWeight && lengths[i] > 0 ? scalars[i] / (lengths[i] / meanLength) : scalars[i];
    const row = new Float32Array(m.length);
    for (let t = 0; t < m.length; t++) row[t] = m[t] === 1 ? a : 0;
    return row;
  });
}

/** Mean and torch-style unbiased std (n - 1) of a list; std is NaN for a single value, as in torch. */
export function meanAndUnbiasedStd(xs: readonly number[]): { mean: number; std: number } {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, std: Number.NaN };
  const sq = xs.reduce((a, x) => a + (x - mean) ** 2, 0);
  return { mean, std: Math.sqrt(sq / (n - 1)) };
}

/**
 * GRPO's group normalisation of trajectory scores (RAGEN v1's context manager, spec §4.3), applied per group:
 *   - 'mean_std':  (x - mean) / (std + eps) with torch's unbiased std, or all zeros when std <= 1e-6 (a group of one
 *                  has an undefined std and also gives zeros);
 *   - 'asym_clip': 'mean_std' then clamp to [-1, 3];
 *   - 'mean':      x - mean;
 *   - 'identity':  unchanged (RAGEN's default: with `adv_estimator=grpo` it silently trains on raw scores).
 * When every sample is its own group nothing is normalised at all (RAGEN skips the step), whatever the method.
 *
 * @param scores   one score per trajectory, format penalty already added
 * @param groupIds one id per trajectory: env group id ("state" grouping), env tag ("inductive") or one constant
 *                 ("batch")
 * @param eps      added to the std in the denominator (RAGEN: 1e-6)
 */
export function grpoNormalize(
  scores: readonly number[],
  groupIds: readonly (number | string)[],
  method: GrpoNormMethod,
  eps = 1e-6,
): number[] {
  if (scores.length !== groupIds.length) {
    throw new Error(`grpoNormalize: ${scores.length} scores but ${groupIds.length} group ids`);
  }
  if (!['mean_std', 'asym_clip', 'mean', 'identity'].includes(method)) {
    throw new Error(`grpoNormalize: unknown method '${method}' (expected mean_std, asym_clip, mean or identity)`);
  }
  scores.forEach((s, i) => checkFinite('grpoNormalize: score', s, `of trajectory ${i}`));
  const members = new Map<number | string, number[]>();
  groupIds.forEach((g, i) => {
    const list = members.get(g);
    if (list) list.push(i);
    else members.set(g, [i]);
  });
  const out = scores.slice();
  if (members.size === scores.length || method === 'identity') return out;
  for (const idx of members.values()) {
    const xs = idx.map((i) => scores[i]);
    const { mean, std } = meanAndUnbiasedStd(xs);
    idx.forEach((i, k) => {
      if (method === 'mean') {
        out[i] = xs[k] - mean;
        return;
      }
      // NaN (group of one) fails the comparison, so it takes the zero branch, as in torch.
      const z = std > ZERO_STD_THRESHOLD ? (xs[k] - mean) / (std + eps) : 0;
      out[i] = method === 'asym_clip' ? Math.min(3, Math.max(-1, z)) : z;
    });
  }
  return out;
}

/**
 * RAGEN's reward normalisation of a batch (spec §4.3): each trajectory's score (format penalty already in it),
 * normalised within its group: one env group ('state'), one env tag ('inductive') or the whole batch ('batch').
 */
export function normalizeScores(
  trajectories: readonly { score: number; groupId: number; tag: string }[],
  how: { method: GrpoNormMethod; grouping: 'state' | 'inductive' | 'batch' },
): number[] {
  const scores = trajectories.map((x) => x.score);
  if (how.method === 'identity') return scores;
  const ids = trajectories.map((x) =>
    how.grouping === 'state' ? x.groupId : how.grouping === 'inductive' ? x.tag : 0,
  );
  return grpoNormalize(scores, ids, how.method);
}

/** One played turn, as the step-level advantage sees it. */
export interface AnchorTurn {
  /** The env group the turn's trajectory belongs to: anchor states are only matched within one group. */
  groupId: number;
  /** The observation the turn started from (the env's rendered state): equal text = the same anchor state. */
  state: string;
  /** Discounted return from this turn on (`returnsToGo`). */
  returnToGo: number;
}

/**
 * Discounted returns-to-go of one trajectory's turn rewards: G_t = r_t + gamma * G_{t+1}, G after the last turn = 0.
 */
export function returnsToGo(turnRewards: readonly number[], gamma: number): number[] {
  if (!(gamma >= 0 && gamma <= 1)) throw new Error(`returnsToGo: gamma must be in [0, 1], got ${gamma}`);
  const out = new Array<number>(turnRewards.length);
  let next = 0;
  for (let t = turnRewards.length - 1; t >= 0; t--) {
    checkFinite('returnsToGo: turn reward', turnRewards[t], `at turn ${t + 1}`);
    next = turnRewards[t] + gamma * next;
    out[t] = next;
  }
  return out;
}

/**
 * GiGPO's step-level advantages (Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent Training"):
 * turns of one env group that start from the same state form an anchor-state group, whichever trajectory and turn
 * they come from, and each turn's return-to-go is normalised within that group with `method` (zeros for a group of
 * one or without spread, as `grpoNormalize`). The result says how much better this turn's action did than the other
 * actions taken from the same state: credit per turn, where the episode-level (GRPO) advantage gives every turn of a
 * trajectory the same credit.
 *
 * @returns one advantage per turn, in the order given, and the share of turns whose anchor group has another member.
 */
export function stepLevelAdvantages(
  turns: readonly AnchorTurn[],
  method: 'mean_std' | 'mean',
): { advantages: number[]; sharedShare: number } {
  const keys = turns.map((t) => `${t.groupId}\u0000${t.state}`);
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  const shared = keys.filter((k) => counts.get(k)! > 1).length;
  // (grpoNormalize returns raw scores when every sample is alone; here a turn without a peer has no advantage.)
  const advantages =
    shared === 0
      ? turns.map(() => 0)
      : grpoNormalize(
          turns.map((t) => t.returnToGo),
          keys,
          method,
        );
  return { advantages, sharedShare: turns.length ? shared / turns.length : 0 };
}

/**
 * Step-level advantages of every turn of every trajectory of a step (algorithm.stepAdvantage), [trajectory][turn]:
 * each turn's return-to-go (its reward and the later ones, discounted; a format penalty counts in the last turn),
 * compared within its anchor-state group by `stepLevelAdvantages`.
 */
export function trajectoryStepAdvantages(
  trajectories: readonly Trajectory[],
  how: { gamma: number; method: 'mean_std' | 'mean' },
): { byTrajectory: number[][]; metrics: Record<string, number> } {
  const turns: AnchorTurn[] = [];
  for (const traj of trajectories) {
    if ((traj.turnSamples ?? []).length !== traj.turns.length) {
      throw new Error(
        `Trainer: trajectory ${traj.envId} has ${traj.turns.length} turns but ${traj.turnSamples?.length ?? 0} turn samples`,
      );
    }
    // The format penalty is the trajectory's (score - totalReward): counted in its last turn.
    const rewards = traj.turns.map(
      (t, k) => t.reward + (k === traj.turns.length - 1 ? traj.score - traj.totalReward : 0),
    );
    returnsToGo(rewards, how.gamma).forEach((g, k) =>
      turns.push({ groupId: traj.groupId, state: traj.turns[k].state, returnToGo: g }),
    );
  }
  const { advantages, sharedShare } = stepLevelAdvantages(turns, how.method);
  let at = 0;
  const absMean = advantages.length ? advantages.reduce((sum, a) => sum + Math.abs(a), 0) / advantages.length : NaN;
  return {
    byTrajectory: trajectories.map((traj) => advantages.slice(at, (at += traj.turns.length))),
    metrics: { 'critic/step_adv/shared_turns': sharedShare, 'critic/step_adv/abs_mean': absMean },
  };
}

/**
 * What the update trains on, from the kept trajectories: their sequences ('full' context mode), or under RAGEN-2's
 * 'single_turn' one sample per turn (`tokenize`d here), each scored with its trajectory's score plus, with GiGPO's
 * stepAdvantage, weight x the turn's step-level advantage. The filter has judged whole trajectories and env groups
 * already; GiGPO's anchor groups are formed over every trajectory of the step (the dropped groups included), so that
 * each state's baseline sees all the actions tried from it, and only kept trajectories are trained on.
 */
export function trainingSamples<Seq>(
  trajectories: readonly Trajectory[],
  sequences: readonly Seq[],
  kept: readonly number[],
  scores: readonly number[],
  how: {
    contextWindowMode: 'full' | 'single_turn';
    stepAdvantage: { weight: number; gamma: number; method: 'mean_std' | 'mean' };
    tokenize: (sample: RenderedPrompt) => Seq;
  },
): { seqs: Seq[]; scores: number[]; metrics: Record<string, number> } {
  if (how.contextWindowMode !== 'single_turn')
    return { seqs: kept.map((i) => sequences[i]), scores: kept.map((i) => scores[i]), metrics: {} };
  const { weight } = how.stepAdvantage;
  const stepLevel = weight > 0 ? trajectoryStepAdvantages(trajectories, how.stepAdvantage) : null;
  const seqs: Seq[] = [];
  const sampleScores: number[] = [];
  for (const i of kept) {
    (trajectories[i].turnSamples ?? []).forEach((sample, turn) => {
      seqs.push(how.tokenize(sample));
      sampleScores.push(scores[i] + (stepLevel ? weight * stepLevel.byTrajectory[i][turn] : 0));
    });
  }
  return { seqs, scores: sampleScores, metrics: stepLevel?.metrics ?? {} };
}
