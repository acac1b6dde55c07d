// The benchmark hook of the Trainer (TrainerOptions.workloadProbe): `ragen bench --only step,torch`
// (src/bench/torchStep.ts) records what each measured training step did, so that the PyTorch side redoes the same work.
import type { GenerateFn } from '../agent/index';

/** What a training step did (TrainerOptions.workloadProbe). */
export interface WorkloadProbe {
  /** One generate call of a training rollout (one turn): each row's prompt and response text (kept as text, so that
   *  counting their tokens costs the timed rollout nothing). */
  rolloutTurn(prompts: readonly string[], responses: readonly string[]): void;
  /** The sequences the update trains on (after the filter): their lengths in tokens, and each one's first loss
   *  target (0 when it has none), from which the log-prob passes run the LM head (`PaddedBatch.firstLossTarget`). */
  trainBatch(sequenceTokens: number[], firstLossTargets: number[]): void;
}

/** The rollout policy `fn`, telling `probe` each turn's prompts and responses after it generated them. */
export function probedGeneration(fn: GenerateFn, probe: WorkloadProbe): GenerateFn {
  const probed: GenerateFn = async (prompts, context) => {
    const outputs = await fn(prompts, context);
    probe.rolloutTurn(prompts, outputs);
    return outputs;
  };
  const inner = fn.continuous;
  if (inner) {
    // Dialogues played on their own end their turns one by one: the probe is told each turn's rows together, in
    // turn order, when the batch is over (as the turn-by-turn rollout tells it).
    probed.continuous = async (first, onTurnEnd, options) => {
      const at = new Map(first.map((d) => [d.key, { turn: 1, prompt: d.prompt }]));
      const turns: { prompts: string[]; responses: string[] }[] = [];
      await inner(
        first,
        (key, output) => {
          const { turn, prompt } = at.get(key)!;
          turns[turn - 1] ??= { prompts: [], responses: [] };
          turns[turn - 1].prompts.push(prompt);
          turns[turn - 1].responses.push(output);
          const next = onTurnEnd(key, output);
          if (next !== null) at.set(key, { turn: turn + 1, prompt: next });
          return next;
        },
        options,
      );
      for (const t of turns) if (t) probe.rolloutTurn(t.prompts, t.responses);
    };
  }
  return probed;
}
