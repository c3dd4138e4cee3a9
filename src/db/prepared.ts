import { createHash } from 'node:crypto';
import pg, { type QueryConfig } from 'pg';

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

/**
 * A client for a pool behind a transaction-pooling pooler (PgBouncer before 1.21 forwards no
 * named statement to the next server it picks): every statement goes unnamed, parsed and
 * planned per execution, so `prepared()` call sites work unchanged and lose only the saved plan.
 * Given per pool (pg.Pool's `Client` option), never process-wide: the direct pools keep their
 * named statements.
 */
export class UnnamedStatementClient extends pg.Client {
  // One signature over pg's overloads: `never` is assignable to each of their return types,
  // and callers only ever see pg.Client's typed overloads (a pool hands out PoolClient).
  override query(...args: unknown[]): never {
    const [config] = args;
    if (isNamedConfig(config)) {
      const { name: _dropped, ...unnamed } = config;
      args[0] = unnamed;
    }
    return (super.query as (...a: unknown[]) => never)(...args);
  }
}

function isNamedConfig(config: unknown): config is QueryConfig & { name: string } {
  if (typeof config !== 'object' || config === null) return false;
  const candidate = config as { name?: unknown; submit?: unknown };
  return typeof candidate.name === 'string' && typeof candidate.submit !== 'function';
}
