// Walking the RunConfig schema by key path: the schema of `agent.trainEnvs.0.tag`, the valid keys of a section.
// Used for "did you mean" suggestions (./parse.ts), checking `--set` keys, and rendering docs/config.md (./docs.ts).
import type { z } from 'zod';
import { RunConfigFieldsSchema } from './schema';

export type AnySchema = z.core.$ZodType;

/** The schema with optional / nullable / refinement wrappers removed. */
export function unwrap(schema: AnySchema): AnySchema {
  let s = schema;
  for (;;) {
    const def = s._zod.def as { type: string; innerType?: AnySchema; in?: AnySchema };
    if (
      def.innerType &&
      ['optional', 'nullable', 'default', 'prefault', 'readonly', 'nonoptional', 'catch'].includes(def.type)
    )
      s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else return s;
  }
}

export function childSchema(schema: AnySchema, segment: PropertyKey): AnySchema | undefined {
  const def = unwrap(schema)._zod.def as {
    type: string;
    shape?: Record<string, AnySchema>;
    element?: AnySchema;
    items?: AnySchema[];
    valueType?: AnySchema;
  };
  if (def.type === 'object')
    return def.shape && Object.hasOwn(def.shape, String(segment)) ? def.shape[String(segment)] : undefined;
  if (def.type === 'array' && /^\d+$/.test(String(segment))) return def.element;
  if (def.type === 'tuple' && /^\d+$/.test(String(segment))) return def.items?.[Number(segment)];
  if (def.type === 'record') return def.valueType;
  return undefined;
}

export function schemaAt(path: readonly PropertyKey[]): AnySchema | undefined {
  let s: AnySchema | undefined = RunConfigFieldsSchema;
  for (const segment of path) {
    if (!s) return undefined;
    s = childSchema(s, segment);
  }
  return s;
}

export function objectShapeAt(path: readonly PropertyKey[]): Record<string, AnySchema> | undefined {
  const s = schemaAt(path);
  if (!s) return undefined;
  const def = unwrap(s)._zod.def as { type: string; shape?: Record<string, AnySchema> };
  return def.type === 'object' ? def.shape : undefined;
}
