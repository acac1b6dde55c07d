// `--recipe key=value` flags of the warm-start lab scripts, as a partial WarmStartRecipe. A value is a number, a
// JSON list or object (`actionsPerAnswer=[1,1]`, `laterCycles=[{...}]`), true / false, or else a string.
import type { WarmStartRecipe } from '../../src/warmstart/warmstart';

export function parseRecipeOverrides(pairs: readonly string[]): Partial<WarmStartRecipe> {
  const recipe: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`--recipe expects key=value, got '${pair}'`);
    const [key, value] = [pair.slice(0, at), pair.slice(at + 1)];
    recipe[key] = /^[\d.e+-]+$/.test(value)
      ? Number(value)
      : /^[[{]/.test(value)
        ? JSON.parse(value)
        : value === 'true'
          ? true
          : value === 'false'
            ? false
            : value;
  }
  return recipe as Partial<WarmStartRecipe>;
}
