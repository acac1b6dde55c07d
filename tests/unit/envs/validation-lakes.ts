// RAGEN's 256 FrozenLake validation seeds (123-378, the v1 lake), each with its closed-loop plan for up to 10
// actions: the lakes on which the protocol-optimum tests (frozenlake-turns.test.ts, eval/optimum.test.ts) compare
// the planners with each other and with the spec's reference numbers.
import { makeEnv, planFrozenLake, type FrozenLakeEnv } from '../../../envs/index';

export function validationLakes(): { env: FrozenLakeEnv; closed: ReturnType<typeof planFrozenLake> }[] {
  return Array.from({ length: 256 }, (_, i) => {
    const env = makeEnv('FrozenLake') as FrozenLakeEnv;
    env.reset(123 + i);
    return { env, closed: planFrozenLake(env.map, env.config.successRate, 10) };
  });
}
