// Checkpoint scorecards (browser-safe part; the Node loader is ./load).
export * from './stats';
export * from './suites';
export * from './scorecard';
export * from './scripted';
export * from './optimum';
export * from './episodes';
export * from './modelPolicy';
export * from './format';
export * from './fromConfig';
export * from './scoreModel';
