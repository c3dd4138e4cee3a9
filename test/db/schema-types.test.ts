import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { generateSchemaTypes, SCHEMA_TYPES_DIR } from '../../src/db/schema-types.ts';
import { clientConfig } from '../../src/db/target.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
let out: string;
before(async () => {
  db = await createTestDatabase();
  out = await mkdtemp(path.join(tmpdir(), 'svc-types-'));
});
after(async () => {
  await rm(out, { recursive: true, force: true });
  await db.drop();
});

test('committed zapatos types match the migrated schema (run `npm run db:types`)', async () => {
  await generateSchemaTypes(clientConfig(db.target, 'admin'), out);
  const fresh = await readFile(path.join(out, 'zapatos', 'schema.d.ts'), 'utf8');
  const committed = await readFile(path.join(SCHEMA_TYPES_DIR, 'zapatos', 'schema.d.ts'), 'utf8');
  assert.ok(fresh.includes("'audit_log'"), 'generation saw the schema');
  assert.equal(committed, fresh);
});
