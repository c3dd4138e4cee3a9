import type { Context } from 'hono';
import type Type from 'typebox';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { ProblemError } from './problem.ts';
import { refuseUnstorableText } from './storable-text.ts';

const compiled = new WeakMap<TSchema, ReturnType<typeof Compile>>();

/**
 * Reads a JSON body and validates it against a closed TypeBox schema. Every failure is a
 * problem with a stable code; validation errors list the failing field paths. `precheck` sees
 * the parsed value before the schema does, for a refusal that must win over validation (a
 * batch with too many items is 413, not a 400 naming `maxItems`).
 */
export async function readJson<S extends TSchema>(
  c: Context,
  schema: S,
  precheck?: (value: unknown) => void,
): Promise<Type.Static<S>> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new ProblemError(415, 'unsupported_media_type', 'Request body must be application/json');
  }
  // Already bounded by limitBody (body-limit.ts), which runs before any handler.
  const text = await c.req.text();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ProblemError(400, 'malformed_json', 'Request body is not valid JSON');
  }
  precheck?.(value);
  refuseUnstorableText(value);
  let check = compiled.get(schema);
  if (!check) {
    check = Compile(schema);
    compiled.set(schema, check);
  }
  if (!check.Check(value)) {
    const errors = check.Errors(value).map((e) => ({
      path:
        e.instancePath === '' && 'requiredProperties' in e.params
          ? `/${String((e.params as { requiredProperties: string[] }).requiredProperties[0])}`
          : e.instancePath || '/',
      message: e.message,
    }));
    throw new ProblemError(400, 'validation_failed', 'Request body failed validation', { errors });
  }
  return value as Type.Static<S>;
}
