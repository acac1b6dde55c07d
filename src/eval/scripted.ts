// Scripted agents behind the ScorecardPolicy interface: reference points with known behaviour, used by the tests
// (the scorecard must report what these agents are known to do) and handy as floors and ceilings next to a model.
//
//   scriptedOptimalPolicy  Sokoban: the BFS solver's shortest plan; FrozenLake: the value-iteration planner (one
//                          move per turn on slippery ice, the whole shortest path when moves are deterministic);
//                          Bandit: the high-risk arm, read from the env's config (a model has to infer it from names).
//   scriptedRandomPolicy   uniformly random action names, as many per turn as the agent may send.
// Both write a short, state-specific reasoning sentence and a well-formed answer.
import { BanditEnv, FrozenLakeEnv, Rng, SokobanEnv, moveOnLake, planFrozenLake, solveSokoban, type Env } from '../../envs/index';
import type { EvalBatchContext, ScorecardPolicy } from './scorecard';

/** Responses for the active envs of a batch, in prompt order, from a per-env rule. */
function perEnvPolicy(name: string, respond: (env: Env, actionsLeft: number, ctx: EvalBatchContext, rng: Rng) => string): ScorecardPolicy {
  return {
    name,
    generateFn(ctx) {
      const rng = Rng.fromSeed(ctx.seed, `eval/${name}`);
      return async (prompts) => {
        // runRollouts builds one prompt per active env, in env-id order: the same order as activeRollouts().
        const active = ctx.manager.activeRollouts();
        if (active.length !== prompts.length) throw new Error(`${name}: ${prompts.length} prompts for ${active.length} active envs`);
        return active.map((rollout) => {
          const entry = ctx.manager.entries[rollout.envId];
          const actionsLeft = entry.maxActionsPerTraj - rollout.status.numActions;
          return respond(entry.env, actionsLeft, ctx, rng);
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
  return perEnvPolicy('scripted-optimal', (env, actionsLeft, ctx) => {
    const perTurn = Math.min(ctx.format.maxActionsPerTurn, actionsLeft);
    const sep = ctx.format.actionSep;
    if (env instanceof BanditEnv) {
      const arm = env.config.hiArmName;
      return answer(`${arm} is the risky arm with the higher mean, so I pull ${arm}.`, [arm], sep);
    }
    if (env instanceof SokobanEnv) {
      const plan = solveSokoban(env.state, actionsLeft) ?? [];
      const moves = plan.slice(0, perTurn);
      if (moves.length === 0) return answer('No plan fits the budget; I wait.', ['Up'], sep);
      return answer(`The shortest plan has ${plan.length} moves; next ${moves.join(' then ')}.`, moves, sep);
    }
    if (env instanceof FrozenLakeEnv) {
      const planner = planFrozenLake(env.map, env.config.successRate, actionsLeft);
      const moves: string[] = [];
      if (env.config.successRate >= 1) {
        // No slips: the planner's moves can be chained without looking.
        let cell = env.position;
        for (let left = actionsLeft; moves.length < perTurn; left--) {
          const a = planner.bestAction(cell, left);
          if (a === null) break;
          moves.push(a);
          cell = moveOnLake(env.map, cell, env.actionNames.indexOf(a));
        }
      } else {
        // Slippery ice: one move, then look again.
        const a = planner.bestAction(env.position, actionsLeft);
        if (a !== null) moves.push(a);
      }
      if (moves.length === 0) moves.push('Left');
      return answer(`From cell ${env.position} the best move is ${moves[0]}.`, moves, sep);
    }
    throw new Error(`scripted-optimal: no plan for env '${env.tag}'`);
  });
}

export function scriptedRandomPolicy(): ScorecardPolicy {
  return perEnvPolicy('scripted-random', (env, actionsLeft, ctx, rng) => {
    const n = Math.max(1, Math.min(ctx.format.maxActionsPerTurn, actionsLeft));
    const moves = Array.from({ length: n }, () => rng.choice(env.actionNames));
    return answer(`I try ${moves.join(' and ')} at random.`, moves, ctx.format.actionSep);
  });
}
