// The agent format most unit tests play with: RAGEN's protocol with the compact prompt and 64 new tokens per turn
// (the tiny presets' shape); each test overrides what it is about.
import type { AgentFormat } from '../../src/agent/index';

export function agentFormat(over: Partial<AgentFormat> = {}): AgentFormat {
  return {
    maxTurn: 5,
    maxActionsPerTurn: 5,
    enableThink: true,
    actionSep: '||',
    promptStyle: 'compact',
    maxContextWindow: -1,
    turnNumbers: 'window',
    contextWindowMode: 'full',
    responseLength: 64,
    formatPenalty: -0.1,
    ...over,
  };
}
