// Reference points for a preset's held-out suite, with no model: the scorecard of the scripted optimal agent (which
// plays the protocol optimum, envs/frozenlakeTurns.ts for FrozenLake), of the same agent held to one move per
// answer (a look after every move, as the scripted agent played before the optimum knew about open-loop answers),
// and of the scripted random agent, on the preset's turn / action limits and RAGEN's validation seeds.
// One command: npx tsx experiments/scripted-references.ts [--preset frozenlake-tiny] [--episodes 256] [--seed-start 123]
//   [--set key=value ...] (run config overrides, as for ragen train; --preset frozenlake-noslip-tiny for a lake that does not slip)
import { Command } from 'commander';
import {
  agentFormatFromConfig,
  formatScorecard,
  protocolFromConfig,
  runScorecard,
  scriptedOptimalPolicy,
  scriptedRandomPolicy,
  suitesFromConfig,
} from '../src/eval/index';
import { applyOverrides } from '../src/starpo/config';
import { presetConfig } from '../src/starpo/presets';

const opts = new Command()
  .option('--preset <name>', 'the preset whose protocol and held-out suite are played', 'frozenlake-tiny')
  .option('--episodes <n>', 'initial states (seeds)', '256')
  .option('--seed-start <n>', 'first seed (RAGEN validation: 123)', '123')
  .option(
    '--set <key=value>',
    'run config override, as for ragen train (repeatable)',
    (v: string, acc: string[]) => [...acc, v],
    [],
  )
  .parse()
  .opts<{ preset: string; episodes: string; seedStart: string; set: string[] }>();

const config = applyOverrides(presetConfig(opts.preset), opts.set);
const format = agentFormatFromConfig(config);
const suites = suitesFromConfig(config).filter((s) => s.kind === 'held-out');
const protocol = protocolFromConfig(config, {
  episodes: Number(opts.episodes),
  baseSeed: Number(opts.seedStart),
  batchSize: 64,
});
const policies = [
  { label: 'scripted optimal (protocol optimum)', policy: scriptedOptimalPolicy(), format },
  {
    label: 'scripted optimal, one move per answer',
    policy: scriptedOptimalPolicy(),
    format: { ...format, maxActionsPerTurn: 1 },
  },
  { label: 'scripted random', policy: scriptedRandomPolicy(), format },
];
for (const { label, policy, format: played } of policies) {
  const card = await runScorecard(policy, suites, protocol, played);
  console.log(`== ${opts.preset}: ${label}`);
  console.log(formatScorecard(card));
}
