// The demo command drives the real agent protocol (prompts, parsing, env groups) with a scripted planner, so a
// solver-backed agent must solve every generated Sokoban level it plays and a bad tag must be refused.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ragen = (...args: string[]) => run('node', ['bin/ragen.js', ...args], { cwd: process.cwd() });

describe('ragen demo', () => {
  it('a BFS-solver agent solves every SimpleSokoban level through the agent protocol', async () => {
    const { stdout } = await ragen('demo', '--env', 'SimpleSokoban', '--episodes', '5', '--seed', '400');
    expect(stdout).toMatch(/SimpleSokoban: success 100% over 5 episode\(s\)/);
    expect(stdout.match(/^solved, total reward/gm)?.length).toBe(5);
  });

  it('plays one Bandit turn and reports the chosen arm', async () => {
    const { stdout } = await ragen('demo', '--env', 'Bandit', '--episodes', '4');
    expect(stdout.match(/answer: {2}(Phoenix|Dragon) {3}-> executed \[(Phoenix|Dragon)\]/g)?.length).toBe(4);
  });

  it('refuses an unknown env tag with exit code 2 and names it', async () => {
    await expect(ragen('demo', '--env', 'Sokobanana')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining("unknown env tag 'Sokobanana'"),
    });
  });
});
