// The one error type of the CLI that is the user's to fix (a bad flag, an unknown preset, a missing checkpoint):
// main.ts prints its message on one line and exits 2. Kept apart from main.ts, which imports every subcommand, so
// that a subcommand throwing it does not import main.ts back.
export class UsageError extends Error {}
