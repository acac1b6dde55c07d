// `ragen bench`: the one place where performance is measured. Prints a table (and JSON with --json) so the figures
// in BENCHMARKS.md come from a command anyone can rerun.
import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { benchEnvs } from './bench-envs';
import { UsageError } from './main';

const SECTIONS = ['envs'] as const;
type Section = (typeof SECTIONS)[number];

export function registerBench(program: Command): void {
  program
    .command('bench')
    .description('measure environment and model throughput on this machine')
    .option('--only <sections>', `comma-separated subset of: ${SECTIONS.join(', ')}`, SECTIONS.join(','))
    .option('--seconds <s>', 'time spent on each measurement', '1')
    .option('--json <file>', 'also write the results as JSON to this file')
    .action(async (opts: { only: string; seconds: string; json?: string }) => {
      const wanted = opts.only.split(',').map((s) => s.trim()).filter(Boolean);
      for (const s of wanted) {
        if (!(SECTIONS as readonly string[]).includes(s)) {
          throw new UsageError(`unknown bench section '${s}' (expected: ${SECTIONS.join(', ')})`);
        }
      }
      const seconds = Number(opts.seconds);
      if (!(seconds > 0)) throw new UsageError(`--seconds must be a positive number, got '${opts.seconds}'`);

      const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}`;
      console.log(`ragen bench on ${machine}`);
      const results: Record<string, Record<string, number>> = {};
      for (const section of wanted as Section[]) {
        if (section === 'envs') results.envs = await benchEnvs({ seconds });
        printTable(section, results[section]);
      }
      if (opts.json) {
        writeFileSync(opts.json, JSON.stringify({ machine, date: new Date().toISOString(), results }, null, 2) + '\n');
        console.log(`wrote ${opts.json}`);
      }
    });
}

function printTable(section: string, rows: Record<string, number>): void {
  console.log(`\n${section}`);
  const width = Math.max(...Object.keys(rows).map((k) => k.length));
  for (const [name, value] of Object.entries(rows)) {
    const shown = value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toPrecision(3);
    console.log(`  ${name.padEnd(width)}  ${shown}`);
  }
}
