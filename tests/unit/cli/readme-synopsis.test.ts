// The README's command-line synopsis is hand-written (value spellings such as `webgpu|wasm|cpu|auto` read better
// than commander's `<name>`), so this test keeps it in step with the commander definitions: every command, and
// for each command exactly the flags it has; a flag the command requires is not shown in [brackets]. The presets
// named under the synopsis are PRESET_NAMES, and `ragen train --help` lists them from there.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { ragenProgram } from '../../../src/cli/main';
import { PRESET_NAMES } from '../../../src/starpo/presets';

const README = fs.readFileSync(path.join(__dirname, '../../../README.md'), 'utf8');

/** The README's synopsis block: command name -> its synopsis text (continuation lines joined). */
function readmeSynopsis(): Map<string, string> {
  const section = README.slice(README.indexOf('## Command line'));
  const block = section.slice(section.indexOf('```\n') + 4, section.indexOf('\n```', section.indexOf('```\n') + 4));
  const out = new Map<string, string>();
  let current: string | null = null;
  for (const line of block.split('\n')) {
    const m = /^npx ragen ([a-z-]+)(.*)$/.exec(line);
    if (m) {
      current = m[1];
      expect(out.has(current), `README lists 'ragen ${current}' twice`).toBe(false);
      out.set(current, m[2]);
    } else if (current && /^\s/.test(line)) {
      out.set(current, `${out.get(current)} ${line}`);
    }
  }
  return out;
}

/** Each long flag in a synopsis, with whether it stands inside [brackets]. */
function flagsOf(synopsis: string): Map<string, { optional: boolean }> {
  const flags = new Map<string, { optional: boolean }>();
  let depth = 0;
  for (const m of synopsis.matchAll(/\[|\]|--[a-z][a-z0-9-]*/g)) {
    if (m[0] === '[') depth += 1;
    else if (m[0] === ']') depth -= 1;
    else flags.set(m[0], { optional: depth > 0 });
  }
  return flags;
}

const commands = (): Command[] => ragenProgram().commands as Command[];

describe("the README's command-line synopsis", () => {
  it('lists exactly the commands of `ragen`', () => {
    expect([...readmeSynopsis().keys()].sort()).toEqual(
      commands()
        .map((c) => c.name())
        .sort(),
    );
  });

  it.each(commands().map((c) => [c.name(), c] as const))(
    'ragen %s: shows exactly its flags, required ones outside [brackets]',
    (name, command) => {
      const shown = flagsOf(readmeSynopsis().get(name) ?? '');
      const defined = command.options.filter((o) => o.long && o.long !== '--help');
      expect([...shown.keys()].sort()).toEqual(defined.map((o) => o.long!).sort());
      for (const option of defined.filter((o) => o.mandatory))
        expect(shown.get(option.long!)?.optional, option.long).toBe(false);
    },
  );

  it('names every preset, and `ragen train --help` lists them from PRESET_NAMES', () => {
    const presets = README.slice(README.indexOf('Presets: `'), README.indexOf('\n\n', README.indexOf('Presets: `')));
    for (const name of PRESET_NAMES) expect(presets, name).toContain(`\`${name}\``);
    const train = commands().find((c) => c.name() === 'train')!;
    const help = train.options.find((o) => o.long === '--preset')!.description;
    for (const name of PRESET_NAMES) expect(help, name).toContain(name);
  });
});
