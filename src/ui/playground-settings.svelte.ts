// The settings form and the URL: every change to the preset, the knobs or the cores goes through here, is written to
// the URL (a link reproduces the setup) and is checked; a field holding an unusable value keeps its text and the
// reason, to be fixed in place.
import {
  checkKnob,
  KNOB_SPECS,
  knobNotANumber,
  readSettingsSearch,
  settingsProblem,
  settingsToSearch,
  withKnob,
  type FieldName,
  type Knobs,
  type PlaygroundSettings,
} from './settings';
import type { WorkersChoice } from '../../workers/protocol';
import { playground } from './playground.svelte';

/**
 * Replaces the settings, writes them to the URL (history.replaceState: a link reproduces the setup), and checks
 * that they make a valid RunConfig for every arm. Invalid settings stay on screen with the error; nothing runs.
 */
export function setSettings(next: PlaygroundSettings): void {
  playground.settings = next;
  if (typeof window !== 'undefined') {
    const search = settingsToSearch(next, window.location.search);
    window.history.replaceState(null, '', `${window.location.pathname}${search}${window.location.hash}`);
  }
  playground.combination = settingsProblem(next);
}

/** Settings read from a URL: the usable part applied, each bad field kept (raw text + plain-words error) to fix. */
export function loadSettingsFromSearch(search: string): PlaygroundSettings {
  const reading = readSettingsSearch(search);
  playground.drafts = { ...reading.drafts };
  playground.fieldErrors = Object.fromEntries(reading.problems.map((p) => [p.fields[0], p.message]));
  setSettings(reading.settings);
  return reading.settings;
}

/** Clears a field's bad value (its draft and error). */
export function clearField(name: FieldName): void {
  if (name in playground.drafts) {
    const { [name]: _d, ...drafts } = playground.drafts;
    playground.drafts = drafts;
  }
  if (name in playground.fieldErrors) {
    const { [name]: _e, ...errors } = playground.fieldErrors;
    playground.fieldErrors = errors;
  }
}

/**
 * The form's entry for a knob: text checked by the same limits as the URL (`badInput`: the browser could not read
 * the field as a number at all). A usable value becomes the setting (the
 * preset's own value clears the knob); anything else stays in the field, highlighted with the reason.
 */
export function setKnobText(name: keyof Knobs, raw: string, presetValue: Knobs[keyof Knobs], badInput = false): void {
  const check = badInput ? { ok: false as const, error: '' } : checkKnob(name, raw);
  if (!check.ok) {
    playground.drafts = { ...playground.drafts, [name]: raw };
    playground.fieldErrors = {
      ...playground.fieldErrors,
      [name]: badInput ? knobNotANumber(name) : `${KNOB_SPECS[name].label} ${check.error}`,
    };
    return;
  }
  clearField(name);
  setSettings(withKnob(playground.settings, name, check.value === presetValue ? undefined : (check.value as never)));
}

/** A new preset starts from its own values: knobs belong to the preset they were set on. */
export function setPreset(preset: PlaygroundSettings['preset']): void {
  clearField('preset');
  for (const name of Object.keys(playground.fieldErrors) as FieldName[]) if (name !== 'backend') clearField(name);
  setSettings({ ...playground.settings, preset, knobs: {} });
}

/** Cores for the next run (a live run keeps the cores it was built with). */
export function setWorkersChoice(workers: WorkersChoice): void {
  clearField('workers');
  setSettings({ ...playground.settings, workers });
}
