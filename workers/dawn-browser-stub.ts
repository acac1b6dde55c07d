// Stands in for the `webgpu` npm package (Dawn for Node) in the browser build. src/model/backend.ts imports it only
// when running in Node, but a bundler follows every import, and the real package pulls in Node built-ins and a
// native .node binary. Browsers have navigator.gpu built in, so reaching this is a bug worth a clear message.
function nodeOnly(): never {
  throw new Error("the 'webgpu' package (Dawn) is Node-only; in the browser tfjs uses the built-in navigator.gpu");
}

export const create = nodeOnly;
export const globals = {};
