// The config sections that measure a run rather than train it: RAGEN-2's collapse diagnostics (is the reasoning
// still input-dependent?) and the echo-trap early warning. Part of RunConfigFieldsSchema (./schema.ts).
import { z } from 'zod';
import { CONFIG_LIMITS as L } from './limits';
import { positiveInt } from './bounded';

export const CollapseSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .describe(
        "Compute RAGEN-2's collapse diagnostics (src/metrics/collapse.ts): the mutual information between prompts and " +
          'reasoning from a cross-scored log-prob matrix. RAGEN v1 has none, so off by default; RAGEN-2 turns it on with ' +
          '`collapse_detection.first_turn_enabled` / `multi_turn_enabled`. Costs extra forward passes on the diagnosed steps.',
      ),
    computeFreq: positiveInt().describe(
      'Diagnose step 1 and every k-th step (RAGEN-2 `collapse_detection.compute_freq`, 5).',
    ),
    numSamples: z
      .union([positiveInt(), z.literal('all')])
      .describe(
        "(x, z) pairs sampled per strategy, or 'all' (RAGEN-2 `collapse_detection.num_samples`, 64). Cost: first-turn " +
          'samples × env groups scored sequences, trajectory samples × trajectory samples (each sample is its own prompt).',
      ),
    firstTurn: z
      .boolean()
      .describe(
        'Log `collapse_first_turn_sample/*`: first turns, one prompt per env group (RAGEN-2 `collapse_detection.first_turn_enabled`, true).',
      ),
    trajectory: z
      .boolean()
      .describe(
        'Log `collapse_trajectory_sample/*` and `collapse/valid_thinking_rate`: a trajectory, then one of its turns, ' +
          'uniformly (RAGEN-2 `collapse_detection.multi_turn_enabled`, true).',
      ),
    microBatchSize: positiveInt()
      .nullable()
      .describe(
        'Sequences per forward pass of the cross-scoring (all with the same prompt); null = actor.ppoMicroBatchSize, ' +
          'which already fits the memory of a training pass (RAGEN-2 `collapse_detection.micro_batch_size`, 128).',
      ),
    stdEps: z
      .number()
      .positive()
      .max(1)
      .describe(
        'ε in the MI z-score (matched − marginal) / (std(marginal) + ε) (RAGEN-2 `collapse_detection.std_eps`, 1e−3).',
      ),
    emaDecay: z
      .number()
      .min(0)
      .lt(1)
      .describe(
        'Decay of the moving average of std(marginal) in `mi_zscore_ema` (RAGEN-2 `collapse_detection.ema_decay`, 0.9).',
      ),
  })
  .describe(
    "RAGEN-2's collapse diagnostics (spec §4.7): is the reasoning still input-dependent? Needs model.enableThink.",
  );

export const EchoTrapSchema = z
  .strictObject({
    baselineSteps: positiveInt().describe(
      'Steps averaged into the baselines of in-group reward std and entropy (their first finite values).',
    ),
    fraction: z
      .number()
      .gt(0)
      .max(1)
      .describe('In-group reward std is low below this fraction of its baseline; the warning always needs it low.'),
    entropyFraction: z
      .number()
      .gt(0)
      .max(1)
      .describe('Entropy (`actor/entropy_loss`) is low below this fraction of its baseline.'),
    miFraction: z
      .number()
      .gt(0)
      .max(1)
      .describe(
        'The MI z-score EMA of the collapse diagnostics is low below this fraction of its baseline (needs collapse.enabled).',
      ),
    miBaselineValues: positiveInt().describe(
      'MI measurements averaged into its baseline (it is measured every collapse.computeFreq steps, from step 1).',
    ),
    miSample: z
      .enum(['first_turn', 'trajectory'])
      .describe(
        'Which collapse sample the MI signal reads: `collapse_first_turn_sample/mi_zscore_ema` or `collapse_trajectory_sample/...`.',
      ),
    patience: positiveInt().describe('Consecutive low steps before the warning fires.'),
    signals: z
      .enum(['reward_std_and_entropy_or_mi', 'reward_std_and_entropy', 'reward_std'])
      .describe(
        "What must be low besides the reward std: entropy or the MI z-score EMA, whichever is known (the paper's early " +
          "warning plus RAGEN-2's template collapse); entropy (the paper's); nothing (RAGEN-2's reward-variance collapse rule).",
      ),
    gradSpikeFactor: z
      .number()
      .gt(1)
      .max(L.real)
      .describe('A gradient norm above this multiple of its running median is a spike (collapse confirmed).'),
    gradMedianWindow: positiveInt().describe('Previous finite gradient norms in that running median.'),
    gradMinHistory: positiveInt().describe('No spike is flagged before this many gradient norms were seen.'),
  })
  .describe(
    'The echo-trap early warning of src/metrics/echoTrap.ts (paper App. B.3: reward std and entropy drop before collapse; ' +
      "RAGEN-2: input dependence of the reasoning drops). Logs `echo_trap/warning` and `echo_trap/signal` (what fired). Not in RAGEN's config.",
  );
