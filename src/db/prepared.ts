import { createHash } from 'node:crypto';
import type { QueryConfig } from 'pg';

/**
 * A named statement: PostgreSQL parses and plans it once per connection and then only binds
 * and executes it (after five executions it may keep one generic plan). For the reads every
 * request makes: an RLS read re-planned on every call cost the overview about 350 µs of
 * PostgreSQL time per request (docs/benchmarks.md, API), more than its execution on light data.
 *
 * Only for fixed statement texts a handful of code paths build (a keyset list's few variants):
 * each distinct text stays prepared on every pooled connection for its lifetime, so text that
 * varies with data (an inlined lock key, an IN list's length) must not come here. The name is
 * `label` plus a digest of the text, so two texts under one label never collide (node-postgres
 * refuses one name for two texts on a connection).
 */
export function prepared(label: string, text: string, values: unknown[]): QueryConfig {
  let name = names.get(text);
  if (name === undefined) {
    name = `${label}.${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
    if (name.length > 63) throw new RangeError(`statement name ${name} exceeds 63 bytes`);
    names.set(text, name);
  }
  return { name, text, values };
}

const names = new Map<string, string>();
