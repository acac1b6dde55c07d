// The Trainer's benchmark hook (probedGeneration): each turn's prompts and responses reach the probe, turn by turn,
// also when the policy plays its dialogues on their own (continuous batching), where turns end one dialogue at a
// time and in any order.
import { describe, expect, it } from 'vitest';
import type { ContinuousGenerate, GenerateFn } from '../../../src/agent/index';
import { probedGeneration, type WorkloadProbe } from '../../../src/starpo/workloadProbe';

function recorder(): WorkloadProbe & { turns: [string[], string[]][] } {
  const turns: [string[], string[]][] = [];
  return { turns, rolloutTurn: (p, r) => turns.push([[...p], [...r]]), trainBatch: () => {} };
}

describe('probedGeneration', () => {
  it('tells the probe each turn-by-turn call', async () => {
    const probe = recorder();
    const fn = probedGeneration(async (prompts) => prompts.map((p) => `${p}!`), probe);
    await fn(['a', 'b']);
    expect(probe.turns).toEqual([
      [
        ['a', 'b'],
        ['a!', 'b!'],
      ],
    ]);
    expect(fn.continuous).toBeUndefined();
  });

  it("gathers a continuous policy's turns by turn number, in turn order, once the batch is over", async () => {
    const probe = recorder();
    const inner: GenerateFn = async () => [];
    // Dialogue 1 plays both its turns before dialogue 0 plays its first.
    const continuous: ContinuousGenerate = async (first, onTurnEnd) => {
      let prompt = first[1].prompt;
      const next = onTurnEnd(1, `${prompt}>x`);
      expect(probe.turns).toEqual([]); // nothing before the batch is over
      prompt = next!;
      expect(onTurnEnd(1, `${prompt}>y`)).toBeNull();
      expect(onTurnEnd(0, `${first[0].prompt}>z`)).toBeNull();
    };
    inner.continuous = continuous;
    const fn = probedGeneration(inner, probe);
    const played: string[] = [];
    await fn.continuous!(
      [
        { key: 0, prompt: 'p0' },
        { key: 1, prompt: 'p1' },
      ],
      (key, output) => {
        played.push(`${key}:${output}`);
        return key === 1 && output === 'p1>x' ? 'p1 then' : null;
      },
      { maxTurn: 2 },
    );
    expect(played).toEqual(['1:p1>x', '1:p1 then>y', '0:p0>z']);
    expect(probe.turns).toEqual([
      [
        ['p1', 'p0'],
        ['p1>x', 'p0>z'],
      ],
      [['p1 then'], ['p1 then>y']],
    ]);
  });
});
