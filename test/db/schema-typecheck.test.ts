import assert from 'node:assert/strict';
import { globSync } from 'node:fs';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import type * as s from 'zapatos/schema';
import type { Narrowed } from '../../src/db/rows.ts';
import { generateSchemaTypes } from '../../src/db/schema-types.ts';
import { clientConfig } from '../../src/db/target.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// DESIGN.md "Inside src/": repository rows are the zapatos types generated from the schema, so
// a renamed or dropped column a repository reads must be a type error, not a runtime surprise.
// This file proves it the way a migration would meet it: rename a column in a scratch copy of
// the migrated schema, regenerate the types (as `npm run db:types` does) and type-check the
// repositories against them with the compiler's API (one program per schema, in process).

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REPOSITORIES = globSync('src/{domains/*/*-repository.ts,db/*.ts}', { cwd: ROOT }).map((f) =>
  path.join(ROOT, f),
);
/**
 * Columns repositories use, one per way a repository names a column: events.stream_seq through
 * `s.events.Selectable` (event-repository.ts maps every event row through it, a hot path),
 * tenants.error_details through `Narrowed` (tenant-types.ts, read by `SELECT *`) and
 * install_settings.updated_by in a zapatos template (settings-repository.ts writes it).
 */
const RENAMED = [
  {
    table: 'events',
    column: 'stream_seq',
    to: 'stream_position',
    file: 'src/domains/events/event-repository.ts',
  },
  {
    table: 'tenants',
    column: 'error_details',
    to: 'failure',
    file: 'src/domains/tenants/tenant-types.ts',
  },
  {
    table: 'install_settings',
    column: 'updated_by',
    to: 'changed_by',
    file: 'src/domains/settings/settings-repository.ts',
  },
];

let db: TestDatabase;
let out: string;
before(async () => {
  db = await createTestDatabase();
  out = await mkdtemp(path.join(tmpdir(), 'svc-schema-typecheck-'));
  // The generated file imports `zapatos/db`; resolve it (and @types) from the project.
  await symlink(path.join(ROOT, 'node_modules'), path.join(out, 'node_modules'), 'dir');
});
after(async () => {
  await rm(out, { recursive: true, force: true });
  await db.drop();
});

/** Types generated from the test database's current schema, written under out/<name>. */
async function generate(name: string): Promise<string> {
  const dir = path.join(out, name);
  await generateSchemaTypes(clientConfig(db.target, 'admin'), dir);
  return path.join(dir, 'zapatos', 'schema.d.ts');
}

/**
 * The compiler's errors in src/ when the repositories are checked against `schemaTypes`
 * instead of the committed src/db/zapatos/schema.d.ts (it declares the same ambient module,
 * so only one of them may be in the program). Row types picked in a `*-types.ts` file report
 * there, so every src/ file the repositories import is checked, not only the roots.
 */
function typeErrors(schemaTypes: string): { file: string; message: string }[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  );
  assert.ok(parsed, 'tsconfig.json parses');
  const program = ts.createProgram([...REPOSITORIES, schemaTypes], parsed.options);
  const src = path.join(ROOT, 'src') + path.sep;
  return program
    .getSourceFiles()
    .filter((f) => path.normalize(f.fileName).startsWith(src))
    .flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)])
    .map((d) => ({
      file: path.relative(ROOT, d.file?.fileName ?? ''),
      message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
    }));
}

test('the repositories type-check against types generated from the migrated schema', async () => {
  assert.ok(REPOSITORIES.length > 20, 'the repositories were found');
  assert.deepEqual(typeErrors(await generate('migrated')), []);
});

test('a renamed column a repository reads fails the type check, naming the column', async () => {
  for (const { table, column, to } of RENAMED)
    await db.pools.admin.query(`ALTER TABLE ${table} RENAME COLUMN ${column} TO ${to}`);
  const errors = typeErrors(await generate('renamed'));
  for (const { column, file } of RENAMED)
    assert.ok(
      errors.some((e) => e.file === file && new RegExp(`['"]${column}['"]`).test(e.message)),
      `expected an error naming '${column}' in ${file}, got ${JSON.stringify(errors, null, 2)}`,
    );
});

test('Narrowed refuses a name that is not a column of the row (checked by tsc)', () => {
  const row: Narrowed<Pick<s.tenants.Selectable, 'state'>, { state: 'active' }> = {
    state: 'active',
  };
  // @ts-expect-error: `stat` is no column of tenants, as a renamed column would not be
  const typo: Narrowed<Pick<s.tenants.Selectable, 'state'>, { stat: 'active' }> = {
    stat: 'active',
  };
  assert.deepEqual([row.state, typo.stat], ['active', 'active']);
});
