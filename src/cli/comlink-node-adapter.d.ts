// comlink ships its Node adapter as node-adapter.mjs with types in node-adapter.d.ts; the import needs the .mjs
// path at run time, so the types are re-declared for that path.
declare module 'comlink/dist/esm/node-adapter.mjs' {
  export { default } from 'comlink/dist/esm/node-adapter';
}
