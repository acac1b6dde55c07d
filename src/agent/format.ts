// Number formatting for reward messages.
//
// RAGEN writes each turn's reward into the dialogue with a Python f-string, `f"Reward:\n{reward}\n"`, so the model
// sees Python's `str()` of the turn sum. That sum starts from the int 0 and adds the env's float rewards, so:
//   - a turn that executed no action prints the int `0`;
//   - otherwise it prints `repr(float)`: shortest round-trip digits, always with a `.0` or an exponent
//     (`1.0`, `-0.1`, `10.700000000000001`, `-0.30000000000000004`, `1e-05`, `1e+16`).
// JavaScript's shortest round-trip digits are the same as Python's; only the layout differs, which is what
// `formatPythonFloat` (envs/format.ts) fixes. (Every reward of Sokoban, FrozenLake and Bandit is a Python float.)
import { formatPythonFloat } from '../../envs/format';

export { formatPythonFloat };

/**
 * The reward text of RAGEN's `Reward:\n{reward}\n` message. `executedActions` is how many primitive actions the
 * turn executed: with none, Python's accumulator is still the int 0.
 */
export function formatRagenReward(reward: number, executedActions: number): string {
  if (executedActions === 0 && reward === 0) return '0';
  return formatPythonFloat(reward);
}

/** Reward text for the compact prompt: rounded to 2 decimals so a tiny vocabulary covers it (`-0.3`, `10.7`, `1`). */
export function formatCompactReward(reward: number): string {
  const rounded = Math.round(reward * 100) / 100;
  return String(rounded === 0 ? 0 : rounded);
}
