#!/usr/bin/env node
// The `ragen` command. The CLI is written in TypeScript and shares its code with the browser playground, so it runs
// through tsx's loader instead of a separate build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
