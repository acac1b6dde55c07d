// The browser-safe metrics layer. Node code imports the JSONL file sink from './jsonlSink' directly, so that
// bundling this index never pulls in node:fs.
export * from './keys';
export * from './reasoning';
export * from './ema';
export * from './echoTrap';
export * from './collapse';
export * from './jsonl';
export * from './sink';
export * from './summary';
