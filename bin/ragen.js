#!/usr/bin/env node
// The `ragen` command. The CLI is written in TypeScript and shares its code with the browser playground, so it runs
// through tsx's loader instead of a separate build step.
import { register } from 'tsx/esm/api';

// An error that escapes every await (a promise rejected with nothing to catch it) is a bug like any other: its stack,
// then exit 1. Node's own report would also quote the source line the error was made on, and tfjs-wasm's module is
// one 40 KB line. Registered first, so it runs before the handlers tfjs-wasm's module adds (they rethrow).
const reportBug = (err) => {
  console.error(err);
  console.error(
    'ragen: this is a bug in ragen (an error nothing caught): please report it with the command line and the trace above',
  );
  process.exit(1);
};
process.on('uncaughtException', reportBug);
process.on('unhandledRejection', reportBug);

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
