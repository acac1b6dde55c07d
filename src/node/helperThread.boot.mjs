// Worker-thread bootstrap for helperThread.ts: TypeScript needs tsx's loader in every thread.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
