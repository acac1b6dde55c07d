// Environment throughput, for `ragen bench --only envs`. Pure: measures and returns, never prints.
// Spec §10.16 gives RAGEN's own figures on a 2-core machine for comparison: Sokoban 376 levels/s and 360 steps/s
// (23k/s without its discarded RGB render), FrozenLake 1,748 resets/s and 21k steps/s, Bandit 44k episodes/s.

import {
  makeEnv,
  renderFrozenLake,
  renderSokoban,
  Rng,
  type Env,
  type FrozenLakeEnv,
  type SokobanEnv,
} from '../../envs/index';

export interface BenchEnvsOptions {
  /** Time spent on each measurement, in seconds (default 1). */
  seconds?: number;
}

/**
 * Operations per second: generated levels per Sokoban variant, env steps (Sokoban, FrozenLake), FrozenLake resets
 * and Bandit episodes (reset + one pull). Keys read like "SimpleSokoban levels/s".
 */
export async function benchEnvs(opts: BenchEnvsOptions = {}): Promise<Record<string, number>> {
  const seconds = opts.seconds ?? 1;
  if (!(seconds > 0) || !Number.isFinite(seconds)) throw new Error(`benchEnvs: seconds must be > 0, got ${seconds}`);
  const results: Record<string, number> = {};
  const policy = Rng.fromSeed(0, 'bench/policy');

  for (const tag of ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab']) {
    const env = makeEnv(tag);
    results[`${tag} levels/s`] = await perSecond(seconds, (i) => env.reset(i));
  }

  // Steps on a fixed level, so that level generation does not count as stepping.
  const generated = makeEnv('SimpleSokoban') as SokobanEnv;
  generated.reset(0);
  const sokoban = makeEnv('SimpleSokoban', { level: renderSokoban(generated.state) });
  results['Sokoban steps/s'] = await perSecond(seconds, randomStepper(sokoban, policy));

  const lake = makeEnv('FrozenLake') as FrozenLakeEnv;
  results['FrozenLake resets/s'] = await perSecond(seconds, (i) => lake.reset(i));
  lake.reset(0);
  const fixedLake = makeEnv('FrozenLake', { map: renderFrozenLake(lake.map, lake.map.start) });
  results['FrozenLake steps/s'] = await perSecond(seconds, randomStepper(fixedLake, policy));

  const bandit = makeEnv('Bandit');
  results['Bandit episodes/s'] = await perSecond(seconds, (i) => {
    bandit.reset(i);
    bandit.step(bandit.actionNames[i & 1]);
  });
  return results;
}

/** One uniformly random action per call; resets (cheaply: fixed level/map) when the episode ends. */
function randomStepper(env: Env, policy: Rng): (i: number) => void {
  env.reset(0);
  return (i) => {
    if (env.step(env.actionNames[policy.int(env.actionNames.length)]).done) env.reset(i);
  };
}

/** Calls `body(i)` for i = 0, 1, ... for about `seconds` and returns calls per second. */
async function perSecond(seconds: number, body: (i: number) => void): Promise<number> {
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let calls = 0;
  let now = start;
  while (now < deadline) {
    // Read the clock every few calls: cheap calls (a step is ~1 µs) would otherwise mostly time the clock.
    for (let k = 0; k < 16; k++) body(calls++);
    now = performance.now();
  }
  await new Promise((resolve) => setTimeout(resolve, 0)); // let the event loop (and a UI) breathe in between
  return calls / ((now - start) / 1000);
}
