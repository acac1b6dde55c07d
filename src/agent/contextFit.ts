// Does a dialogue fit the model? Every token of the prompt and of every turn needs a position, and a model has
// max_position_embeddings of them; past the last one the rotary tables run out (on wasm a "table index out of
// bounds" crash half-way through a run). This estimates, per env block and before any work, the longest dialogue a
// rollout can produce, so a run, an eval or a custom board that cannot fit is refused with one line that names it.
//
// The estimate renders the real prompt (same builder, same options as the rollout loop) from each block's first
// initial state, with maxTurn − 1 earlier turns whose responses are empty tags, and adds maxNewTokens for every
// response the prompt can show (each is at most that long: maxTurn of them, or maxContextWindow). Observations of the grid envs keep their size from turn to turn, so
// this is a close upper bound; with maxTurn = 1 it is exact: the first prompt plus one response.
import type { TagBlock } from './envGroups';
import { EnvGroupManager } from './envGroups';
import { buildPrompt } from './prompt';
import { envRegistry } from './registry';
import type { AgentFormat } from './rollout';
import type { HistoryRecord } from './types';

export interface ContextFitOptions {
  /** The blocks to check, each with the name the error uses (e.g. `agent.trainEnvs[0]`, `suite sokoban/ood-8x8`). */
  blocks: readonly { name: string; block: TagBlock }[];
  /** Seed of the initial state measured (the split's first seed). */
  seed: number;
  /** How the agent talks: turns, prompt style, context window, and the most tokens sampled per turn (responseLength). */
  format: AgentFormat;
  /** The model's positions (max_position_embeddings). */
  maxPositions: number;
  /** Token count of a text under the model's tokenizer. */
  countTokens: (text: string) => number;
}

export interface DialogueLength {
  name: string;
  tag: string;
  /** Tokens of the first generation prompt. */
  firstPrompt: number;
  /** The estimated longest dialogue: prompt, maxTurn turns of responses and the observations between them. */
  longest: number;
}

/** The first-prompt and longest-dialogue token counts of each block (see the top of this file). */
export function dialogueLengths(o: ContextFitOptions): DialogueLength[] {
  const f = o.format;
  const promptOptions = {
    style: f.promptStyle,
    enableThink: f.enableThink,
    actionSep: f.actionSep,
    maxContextWindow: f.maxContextWindow,
    mode: 'generation',
  } as const;
  const emptyResponse = f.enableThink ? '<think></think><answer></answer>' : '<answer></answer>';
  const registry = envRegistry({ responseLength: f.responseLength });
  return o.blocks.map(({ name, block }) => {
    const manager = new EnvGroupManager(
      { mode: 'val', envGroups: 1, groupSize: 1, tags: [{ ...block, nGroups: 1 }], baseSeed: o.seed },
      registry,
    );
    const [rollout] = manager.reset();
    const info = manager.entries[0].info;
    const first = rollout.history[0];
    const history: HistoryRecord[] = [];
    for (let turn = 1; turn < f.maxTurn; turn++) {
      history.push({
        ...first,
        actions: [],
        reward: -0.1,
        info: null,
        llmResponse: emptyResponse,
        llmRawResponse: emptyResponse,
      });
    }
    history.push(first);
    const firstPrompt = o.countTokens(buildPrompt(info, [first], promptOptions).text);
    // A window of k turns shows at most k responses (the k − 1 earlier ones and the one being sampled).
    const responsesShown = f.maxContextWindow > 0 ? Math.min(f.maxTurn, f.maxContextWindow) : f.maxTurn;
    const longest = o.countTokens(buildPrompt(info, history, promptOptions).text) + responsesShown * f.responseLength;
    return { name, tag: block.tag, firstPrompt, longest };
  });
}

/**
 * Throws an Error naming the first block whose dialogue cannot fit `maxPositions`: its first prompt plus one
 * response, or the estimated longest dialogue over maxTurn turns, and what to change.
 */
export function assertDialoguesFit(o: ContextFitOptions): void {
  const { maxTurn, responseLength: maxNewTokens } = o.format;
  for (const d of dialogueLengths(o)) {
    const where = d.name.includes(d.tag) ? d.name : `${d.name} (${d.tag})`;
    if (d.firstPrompt + maxNewTokens > o.maxPositions) {
      throw new Error(
        `${where}: the first prompt is ${d.firstPrompt} tokens, plus up to ${maxNewTokens} new tokens (rollout.maxNewTokens) ` +
          `that is more than the model's ${o.maxPositions} positions (max_position_embeddings): use a smaller level or map, ` +
          'fewer new tokens, or a model with more positions',
      );
    }
    if (d.longest > o.maxPositions) {
      throw new Error(
        `${where}: ${maxTurn} turns of up to ${maxNewTokens} new tokens can grow the dialogue to about ${d.longest} ` +
          `tokens, more than the model's ${o.maxPositions} positions (max_position_embeddings): lower agent.maxTurn or ` +
          'rollout.maxNewTokens, set agent.maxContextWindow, or use a model with more positions',
      );
    }
  }
}
