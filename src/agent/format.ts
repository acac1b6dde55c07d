// Number formatting for reward messages.
//
// RAGEN writes each turn's reward into the dialogue with a Python f-string, `f"Reward:\n{reward}\n"`, so the model
// sees Python's `str()` of the turn sum. That sum starts from the int 0 and adds the env's float rewards, so:
//   - a turn that executed no action prints the int `0`;
//   - otherwise it prints `repr(float)`: shortest round-trip digits, always with a `.0` or an exponent
//     (`1.0`, `-0.1`, `10.700000000000001`, `-0.30000000000000004`, `1e-05`, `1e+16`).
// JavaScript's shortest round-trip digits are the same as Python's; only the layout differs, which is what
// `formatPythonFloat` fixes. (Every reward of Sokoban, FrozenLake and Bandit is a Python float.)

/** Python's `repr(float(x))` / `str(float(x))`. */
export function formatPythonFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';

  // toExponential() without an argument gives the shortest digits that round-trip: "d.ddde±x".
  const [mantissa, expText] = x.toExponential().split('e');
  const exponent = Number(expText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';

  // Python switches to scientific notation when the exponent is < -4 or >= 16.
  if (exponent < -4 || exponent >= 16) {
    const frac = digits.slice(1);
    const expSign = exponent < 0 ? '-' : '+';
    const expDigits = String(Math.abs(exponent)).padStart(2, '0');
    return `${sign}${digits[0]}${frac ? '.' + frac : ''}e${expSign}${expDigits}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const intPart = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  const fracPart = digits.slice(exponent + 1);
  return `${sign}${intPart}.${fracPart || '0'}`;
}

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
