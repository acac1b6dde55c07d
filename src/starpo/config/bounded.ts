// The bounded zod numbers every config section is built from: each count and seed has an upper bound
// (./limits.ts), checked before any work.
import { z } from 'zod';
import { CONFIG_LIMITS } from './limits';

export const positiveInt = (max: number = CONFIG_LIMITS.count) => z.int().min(1).max(max);
export const nonNegativeInt = (max: number = CONFIG_LIMITS.count) => z.int().min(0).max(max);
export const probability = () => z.number().min(0).max(1);
