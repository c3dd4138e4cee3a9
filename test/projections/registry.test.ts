import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { PROJECTIONS } from '../../src/domains/projections/projection-registry.ts';
import { createProjectionService } from '../../src/domains/projections/projection-service.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { projectionRows, randomTraffic, randomWork, seeded } from './support.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROJECTIONS_DIR = 'src/domains/projections';
/** The registry's own bookkeeping, written by the projections domain but no projection. */
const CHECKPOINTS = 'projection_checkpoints';

async function files(dir: string, pattern: RegExp): Promise<{ file: string; text: string }[]> {
  const out: { file: string; text: string }[] = [];
  for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true })) {
    const child = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await files(child, pattern)));
    else if (pattern.test(entry.name) && !entry.name.endsWith('.d.ts'))
      out.push({ file: child, text: await readFile(path.join(ROOT, child), 'utf8') });
  }
  return out;
}

/** Tables the migrations create. */
async function schemaTables(): Promise<Set<string>> {
  const tables = new Set<string>();
  for (const { text } of await files('sql', /^\d{4}_.*\.sql$/))
    for (const m of text.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?([a-z_][a-z0-9_]*)/g))
      if (m[1]) tables.add(m[1]);
  return tables;
}

/** For each table, the source files whose literal SQL (or zapatos shortcut) writes it. */
async function writers(): Promise<Map<string, Set<string>>> {
  const result = new Map<string, Set<string>>();
  const WRITE =
    /\b(?:INSERT INTO|UPDATE|DELETE FROM)\s+([a-z_][a-z0-9_]*)|\b(?:insert|upsert|update|deleteFrom)\(\s*'([a-z_][a-z0-9_]*)'/g;
  for (const { file, text } of await files('src', /\.ts$/)) {
    for (const m of text.matchAll(WRITE)) {
      const table = m[1] ?? m[2] ?? '';
      const set = result.get(table) ?? new Set<string>();
      set.add(file);
      result.set(table, set);
    }
  }
  return result;
}

test('DESIGN events: every projection table of the schema has one registered module, and only the projections domain writes it', async () => {
  const schema = await schemaTables();
  const written = await writers();
  const registered = PROJECTIONS.map((p) => p.table);
  assert.equal(new Set(registered).size, registered.length, 'one module per table');
  assert.equal(new Set(PROJECTIONS.map((p) => p.name)).size, PROJECTIONS.length, 'unique names');
  for (const table of registered) assert.ok(schema.has(table), `${table} is in the schema`);
  // A projection table is one the projections domain writes: a module left out of the
  // registry still carries its statements, so its table shows up here unregistered.
  const projectionTables = [...written]
    .filter(([table]) => table !== CHECKPOINTS && schema.has(table))
    .filter(([, by]) => [...by].some((f) => f.startsWith(`${PROJECTIONS_DIR}/`)))
    .map(([table]) => table)
    .sort();
  assert.deepEqual(projectionTables, [...registered].sort());
  for (const table of registered) {
    const outside = [...(written.get(table) ?? [])].filter(
      (f) => !f.startsWith(`${PROJECTIONS_DIR}/`),
    );
    assert.deepEqual(outside, [], `${table} is derived from events only`);
  }
});

test('DESIGN events: each registered module names its events, its key and statements that write its own table', () => {
  for (const projection of PROJECTIONS) {
    assert.ok(projection.events.size > 0, projection.name);
    assert.ok(projection.key.length > 0, projection.name);
    assert.ok(projection.writes.length > 0, projection.name);
    for (const write of projection.writes)
      assert.match(write.text, new RegExp(`\\b(INSERT INTO|UPDATE) ${projection.table}\\b`));
  }
});

let db: TestDatabase;
let system: SystemGate;
before(async () => {
  db = await createTestDatabase();
  system = createSystemGate(db.target);
});
after(async () => {
  await system.close();
  await db.drop();
});

test('§2.3 a rebuild covers every registered projection: each has rows, the rebuild gives them again exactly, and each checkpoint ends at the last event', async () => {
  const tenant = await createTenant(db.pools.app);
  await randomTraffic(db.app, tenant, 150, seeded(28));
  // Analyst and review work on those investigations, for the projections that fold it.
  await randomWork(db.app, tenant, seeded(29));
  const projections = createProjectionService({ db: db.app, system, batchSize: 40 });
  for (;;) {
    const outcome = await projections.foldNext(tenant);
    assert.equal(outcome.kind, 'folded');
    if (outcome.kind === 'folded' && outcome.caughtUp) break;
  }
  const incremental = await projectionRows(db, tenant);
  for (const { table } of PROJECTIONS)
    assert.ok((incremental[table] ?? []).length > 0, `${table} has rows to rebuild`);

  const rebuilt = await projections.rebuild(tenant);
  assert.deepEqual(await projectionRows(db, tenant), incremental);
  const { rows } = await db.pools.mssp.query<{ projection: string; last_event_id: string }>(
    'SELECT projection, last_event_id FROM projection_checkpoints WHERE tenant_id = $1',
    [tenant],
  );
  assert.deepEqual(
    rows.map((r) => [r.projection, r.last_event_id]).sort(),
    PROJECTIONS.map((p) => [p.name, String(rebuilt.lastEventId)]).sort(),
  );
});
