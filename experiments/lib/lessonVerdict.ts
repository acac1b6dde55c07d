// The lesson verdict is the product's (src/metrics/lessonVerdict.ts), shared with the lesson page and `ragen lesson`;
// experiments import it from here as they always have.
export * from '../../src/metrics/lessonVerdict';
