// The two-name-pair variant of the echo-trap lesson (issue 34, item 2; experiments/lab/echo-trap-names.yaml laid
// over the preset's vanilla arm), as the lab scripts that build and probe its warm start use it.
import * as fs from 'node:fs';
import { mergeConfigInput, parseRunConfig, readConfigText, type RunConfig } from '../../src/starpo/config';
import { presetConfig } from '../../src/starpo/presets';

export const ECHO_TRAP_NAMES_FILE = 'experiments/lab/echo-trap-names.yaml';

export function echoTrapNamesConfig(): RunConfig {
  const input = readConfigText(fs.readFileSync(ECHO_TRAP_NAMES_FILE, 'utf8'), 'yaml', ECHO_TRAP_NAMES_FILE);
  return parseRunConfig(mergeConfigInput(presetConfig('echo-trap', 'starpo'), input), ECHO_TRAP_NAMES_FILE);
}
