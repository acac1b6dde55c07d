// Number formatting that matches what RAGEN's Python prints, because those strings end up in the model's context
// (Bandit's "Dragon: 1.0 points", the manager's "Reward:\n-0.1\n"). JavaScript's shortest round-trip digits are the
// same as Python's; only the layout differs (Python always writes a '.0' or an exponent, and switches to exponent
// notation below 1e-4 and from 1e16), which is what this fixes.

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
