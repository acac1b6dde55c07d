// When a sampled turn has reached a stop string (RAGEN stops a turn at `</answer>`).
//
// A row's text is checked after each new token, by decoding its last few tokens. A stop string can only newly appear
// ending in the newest token (anything before it was checked already), so the newest token's own text must hold the
// stop string's last character; which tokens do is a per-id fact, remembered. Only then is the tail decoded: most
// tokens skip the decode. This is exact for stop strings that end in an ASCII character, whose byte a byte-level
// token decodes to the same character alone or in context; otherwise every token decodes the tail.

/**
 * A check for `stopStrings` (none: always false) over a row's new tokens, to be called after each token is
 * appended: whether the decoded tail now contains one of them.
 */
export function stopStringCheck(
  stopStrings: readonly string[],
  decode: ((ids: number[]) => string) | undefined,
): (tokens: readonly number[]) => boolean {
  if (!stopStrings.length) return () => false;
  if (!decode) throw new Error('generate: stopStrings need a decode function');
  const tailTokens = Math.max(...stopStrings.map((s) => s.length)) + 8;
  const lastChars = [...new Set(stopStrings.map((s) => s[s.length - 1]))];
  const filtered = lastChars.every((c) => c.charCodeAt(0) < 128);
  const mayEnd = new Map<number, boolean>(); // token id -> whether its text holds a last character
  return (tokens) => {
    const newest = tokens[tokens.length - 1];
    if (filtered) {
      let may = mayEnd.get(newest);
      if (may === undefined) {
        const text = decode([newest]);
        may = lastChars.some((c) => text.includes(c));
        mayEnd.set(newest, may);
      }
      if (!may) return false;
    }
    const tail = decode(tokens.slice(-tailTokens));
    return stopStrings.some((s) => tail.includes(s));
  };
}
