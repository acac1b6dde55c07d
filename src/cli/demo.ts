// `ragen demo`: a scripted agent plays RAGEN's environments in the terminal, through the same multi-turn protocol
// the LLM agent uses (env groups, RAGEN prompts, <think>/<answer> parsing, action budget, format penalty).
// The "policy" is a scripted agent of src/eval/scripted.ts that writes its reasoning and answer as text: the BFS
// solver for Sokoban, the turn planner for FrozenLake (envs/frozenlakeTurns.ts: the best answers under the demo's
// turn and action limits), and a coin flip for Bandit (no name carries information a script could use).
import type { Command } from 'commander';
import { ENV_TAGS } from '../../envs/index';
import { EnvGroupManager, envRegistry, runRollouts, type AgentFormat, type Trajectory } from '../agent/index';
import { scriptedOptimalPolicy, scriptedRandomPolicy } from '../eval/scripted';
import type { EvalSuite } from '../eval/suites';
import { PROTOCOL_LIMITS } from '../eval/scorecard';
import { CONFIG_LIMITS, agentFormatFromConfig, defaultRunConfig } from '../starpo/config';
import { intFlag } from './flags';
import { UsageError } from './usage';

interface DemoOptions {
  env?: string;
  seed: string;
  episodes: string;
  actionsPerTurn: string;
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'watch a scripted agent (solver / planner / coin flip) play each environment through the agent protocol',
    )
    .option('--env <tag>', `one environment tag (default: all of ${ENV_TAGS.join(', ')})`)
    .option('--seed <s>', 'base seed of the episodes (RAGEN validation seeds start at 123)', '123')
    .option('--episodes <n>', 'episodes per environment', '1')
    .option('--actions-per-turn <n>', 'actions the agent commits per turn (RAGEN max_actions_per_turn)', '2')
    .action(async (opts: DemoOptions) => {
      const tags = opts.env ? [opts.env] : [...ENV_TAGS];
      for (const tag of tags) {
        if (!ENV_TAGS.includes(tag))
          throw new UsageError(`unknown env tag '${tag}' (valid tags: ${ENV_TAGS.join(', ')})`);
      }
      // The bounds of the same quantities elsewhere: eval's seeds and episodes, the config's actions per turn.
      const seed = intFlag(opts.seed, '--seed', 0, PROTOCOL_LIMITS.seed)!;
      const episodes = intFlag(opts.episodes, '--episodes', 1, PROTOCOL_LIMITS.episodes)!;
      if (seed + episodes - 1 > PROTOCOL_LIMITS.seed)
        throw new UsageError(`--seed + --episodes - 1 must be at most ${PROTOCOL_LIMITS.seed}`);
      const actionsPerTurn = intFlag(opts.actionsPerTurn, '--actions-per-turn', 1, CONFIG_LIMITS.actions)!;
      for (const tag of tags) await playTag(tag, seed, episodes, actionsPerTurn);
    });
}

async function playTag(tag: string, seed: number, episodes: number, actionsPerTurn: number): Promise<void> {
  const isBandit = tag.startsWith('Bandit');
  // RAGEN's agent format (its prompt wording, think + answer), with the demo's turn and action limits.
  const format: AgentFormat = {
    ...agentFormatFromConfig(defaultRunConfig()),
    maxTurn: isBandit ? 1 : 5,
    maxActionsPerTurn: isBandit ? 1 : actionsPerTurn,
  };
  // One env per group, one rollout each: RAGEN's validation layout.
  const manager = new EnvGroupManager(
    { mode: 'val', envGroups: episodes, groupSize: 1, tags: [{ tag, nGroups: episodes }], baseSeed: seed },
    envRegistry(),
  );
  // The scorecard's scripted agents (src/eval/scripted.ts): no arm name tells a script which Bandit arm is better,
  // so the demo flips a coin there instead of reading the answer from the env's config.
  const policy = isBandit ? scriptedRandomPolicy() : scriptedOptimalPolicy();
  const suite: EvalSuite = { name: tag, kind: 'held-out', tag, description: tag };
  const generate = policy.generateFn({ suite, manager, format, temperature: 0, seed });
  const result = await runRollouts(manager, generate, format);
  for (const trajectory of result.trajectories) printTrajectory(tag, trajectory);
  const success = result.envMetrics[`${tag}/success`] ?? 0;
  console.log(`${tag}: success ${(success * 100).toFixed(0)}% over ${episodes} episode(s)\n`);
}

function printTrajectory(tag: string, t: Trajectory): void {
  console.log(`=== ${tag}, seed ${t.status.seed} ===`);
  for (const turn of t.turns) {
    console.log(`Turn ${turn.turn}:\n${turn.state}`);
    console.log(`  think:   ${turn.think}`);
    console.log(
      `  answer:  ${turn.answer}   -> executed [${turn.executedActions.join(', ')}], reward ${turn.reward.toFixed(2)}`,
    );
  }
  const last = t.history[t.history.length - 1];
  console.log(`Final state:\n${last.state}`);
  console.log(
    `${t.success ? 'solved' : 'not solved'}, total reward ${t.totalReward.toFixed(2)}, actions ${t.status.numActions}\n`,
  );
}
