// Number formatting that matches what RAGEN's Python prints, because those strings end up in the model's context
// (Bandit's "Dragon: 1.0 points", the manager's "Reward:\n-0.1\n").

/**
 * A number as Python's `str(float)` writes it: integral values keep one decimal ("1.0", "0.0", "-1.0"), other
 * values use the shortest round-tripping digits, which JavaScript and Python agree on ("0.1", "10.700000000000001").
 * Python switches to exponent notation outside [1e-4, 1e16); JavaScript outside [1e-6, 1e21). Rewards never get
 * there, so those ranges are written the JavaScript way.
 */
export function formatPythonFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (Number.isInteger(x) && Math.abs(x) < 1e16) {
    return (Object.is(x, -0) ? '-' : '') + x.toFixed(1);
  }
  return String(x);
}
