// The headless entry point (`ragen` bin). Each subcommand lives in its own file; this one only wires them to the
// command line. Errors that users can fix (bad flags, unknown presets, broken checkpoints) print one clear line and
// exit 2; unexpected failures are bugs: they print the stack, a line asking to report it, and exit 1.
import { Command, CommanderError } from 'commander';
import { registerBench } from './bench';
import { registerDemo } from './demo';
import { RegressionGateError, registerEval } from './eval';
import { registerExport } from './export';
import { registerImportMetrics } from './import-metrics';
import { registerInitModel } from './init-model';
import { registerWarmstart } from './warmstart';
import { registerTrain } from './train';
import { registerLesson } from './lesson';
import { checkEnvironment, ENV_VARIABLES } from './envVars';
import { UsageError } from './usage';

const EXAMPLES = [
  'Examples:',
  '  npx ragen train --preset bandit-tiny            StarPO-S on Bandit with a tiny model (a few minutes on a CPU)',
  "  npx ragen eval --checkpoint runs/bandit-tiny    scorecard of that run's newest checkpoint",
].join('\n');

/** The `ragen` command with every subcommand and its flags (also read by the test that keeps the README's synopsis). */
export function ragenProgram(): Command {
  const program = new Command()
    .name('ragen')
    .description('RAGEN (StarPO / StarPO-S multi-turn RL for LLM agents) in TypeScript, headless')
    .showHelpAfterError()
    .exitOverride()
    .hook('preAction', () => checkEnvironment())
    .addHelpText(
      'after',
      `\n${EXAMPLES}\n\nEnvironment variables:\n${ENV_VARIABLES.map(([name, what]) => `  ${name.padEnd(24)}${what}`).join('\n')}`,
    );
  // In the order a newcomer uses them: train, then look at what was trained; the tools after.
  registerTrain(program);
  registerLesson(program);
  registerEval(program);
  registerWarmstart(program);
  registerDemo(program);
  registerExport(program);
  registerImportMetrics(program);
  registerInitModel(program);
  registerBench(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = ragenProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof UsageError) {
      console.error(`ragen: ${err.message}`);
      return 2;
    }
    if (err instanceof RegressionGateError) {
      console.error(err); // one line (its inspect hook), exit 1: the gate failed, not the command
      return 1;
    }
    console.error(err);
    console.error(
      'ragen: this is a bug in ragen, not a problem with your input: please report it with the command line and the trace above',
    );
    return 1;
  }
}
