// Scripted agents behind the ScorecardPolicy interface: reference points with known behaviour, used by the tests
// (the scorecard must report what these agents are known to do) and handy as floors and ceilings next to a model.
//
//   scriptedOptimalPolicy  the best any agent can do under the run's protocol (turns, actions per answer, action
//                          budget). Sokoban: the BFS solver's shortest plan that fits the turns and the budget, cut
//                          into answers of maxActionsPerTurn (moves are deterministic, so open loop costs nothing);
//                          FrozenLake: the exact optimum of envs/frozenlakeTurns.ts (answers of several moves
//                          played blind, slips included); Bandit: the high-risk arm, read from the env's config (a
//                          model has to infer it from names).
//   scriptedRandomPolicy   uniformly random action names, as many per turn as the agent may send.
// Both write a short, state-specific reasoning sentence and a well-formed answer.
import { BanditEnv, FrozenLakeEnv, Rng, SokobanEnv, solveSokoban, type Env } from '../../envs/index';
import { frozenLakeTurnPlanner } from './optimum';
import type { EvalBatchContext, ScorecardPolicy } from './scorecard';

/** Where an env stands in its episode when the policy answers. */
interface TurnState {
  /** Primitive actions the episode may still take. */
  actionsLeft: number;
  /** Turns (answers) left, this one included. */
  turnsLeft: number;
  /** The episode's action budget (the env block's max_actions_per_traj). */
  maxActionsPerTraj: number;
}

/** Responses for the active envs of a batch, in prompt order, from a per-env rule. */
function perEnvPolicy(
  name: string,
  respond: (env: Env, turn: TurnState, ctx: EvalBatchContext, rng: Rng) => string,
): ScorecardPolicy {
  return {
    name,
    generateFn(ctx) {
      const rng = Rng.fromSeed(ctx.seed, `eval/${name}`);
      return async (prompts) => {
        // runRollouts builds one prompt per active env, in env-id order: the same order as activeRollouts().
        const active = ctx.manager.activeRollouts();
        if (active.length !== prompts.length)
          throw new Error(`${name}: ${prompts.length} prompts for ${active.length} active envs`);
        return active.map((rollout) => {
          const entry = ctx.manager.entries[rollout.envId];
          const turnsPlayed = rollout.history.length - 1; // the last record is the state to act on
          return respond(
            entry.env,
            {
              actionsLeft: entry.maxActionsPerTraj - rollout.status.numActions,
              turnsLeft: ctx.format.maxTurn - turnsPlayed,
              maxActionsPerTraj: entry.maxActionsPerTraj,
            },
            ctx,
            rng,
          );
        });
      };
    },
  };
}

/** The text after the forced `<think>`: reasoning, then the answer. */
function answer(think: string, actions: readonly string[], sep: string): string {
  return `${think}</think><answer>${actions.join(` ${sep} `)}</answer>`;
}

export function scriptedOptimalPolicy(): ScorecardPolicy {
  return perEnvPolicy('scripted-optimal', (env, turn, ctx) => {
    const perTurn = Math.min(ctx.format.maxActionsPerTurn, turn.actionsLeft);
    const sep = ctx.format.actionSep;
    if (env instanceof BanditEnv) {
      const arm = env.config.hiArmName;
      return answer(`${arm} is the risky arm with the higher mean, so I pull ${arm}.`, [arm], sep);
    }
    if (env instanceof SokobanEnv) {
      // The moves that can still be sent: the budget, and as many answers as turns are left.
      const reachable = Math.min(turn.actionsLeft, turn.turnsLeft * ctx.format.maxActionsPerTurn);
      const plan = solveSokoban(env.state, reachable) ?? [];
      const moves = plan.slice(0, perTurn);
      if (moves.length === 0) return answer('No plan fits the budget; I wait.', ['Up'], sep);
      return answer(`The shortest plan has ${plan.length} moves; next ${moves.join(' then ')}.`, moves, sep);
    }
    if (env instanceof FrozenLakeEnv) {
      const planner = frozenLakeTurnPlanner(env.map, env.config.successRate, {
        maxTurn: ctx.format.maxTurn,
        maxActionsPerTurn: ctx.format.maxActionsPerTurn,
        maxActionsPerTraj: turn.maxActionsPerTraj,
      });
      const moves = planner.bestAnswer(env.position, turn.actionsLeft, turn.turnsLeft);
      if (moves.length === 0) moves.push('Left');
      const chance = planner.successProbability(env.position, turn.actionsLeft, turn.turnsLeft);
      return answer(
        `From cell ${env.position} the goal is reached with probability ${chance.toFixed(2)}; I go ${moves.join(' then ')}.`,
        moves,
        sep,
      );
    }
    throw new Error(`scripted-optimal: no plan for env '${env.tag}'`);
  });
}

export function scriptedRandomPolicy(): ScorecardPolicy {
  return perEnvPolicy('scripted-random', (env, turn, ctx, rng) => {
    const n = Math.max(1, Math.min(ctx.format.maxActionsPerTurn, turn.actionsLeft));
    const moves = Array.from({ length: n }, () => rng.choice(env.actionNames));
    return answer(`I try ${moves.join(' and ')} at random.`, moves, ctx.format.actionSep);
  });
}
