// The policy's learning-rate warm-up, as veRL schedules it (RAGEN `actor_rollout_ref.actor.optim.lr_warmup_steps_ratio`,
// 0 in RAGEN's config): the warm-up lasts floor(ratio x total training steps) steps; during it the rate rises
// linearly from 0, and it is constant after. veRL steps its scheduler once per training step, after the update, with
// Hugging Face's constant-with-warm-up rule, so training step 1 updates at rate 0 (Adam's moments still see its
// gradient) and step k at (k - 1) / warm-up steps of the rate.

/** The factor on actor.lr at training step `step` (1-based) of a run of `totalSteps` steps. */
export function warmupLrFactor(step: number, ratio: number, totalSteps: number): number {
  const warmupSteps = Math.floor(ratio * totalSteps);
  if (warmupSteps <= 0) return 1;
  return Math.min(1, (step - 1) / warmupSteps);
}
