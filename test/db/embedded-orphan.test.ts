import assert from 'node:assert/strict';
import { chmod, cp, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { startEmbedded } from '../../src/db/embedded.ts';
import { packagedBinaries, postgresIds } from '../../src/db/postgres-process.ts';
import { createLogger } from '../../src/log/index.ts';

/**
 * Issue 16 "the README's quick start on a clean machine", found on a Debian 12 chroot: as root
 * in /root (mode 700) the cluster lives in `<root>/data-<digest of SVC_DATA_DIR>`. After
 * `rm -rf svc && git clone … svc && npm start` (or `rm -rf .svc`) the same path hashed to the
 * same directory, still holding the old cluster, and the start ended in
 * `svc: initdb failed (exit 1): … either remove or empty the directory …`.
 */
let home: string;
let root: string;

before(async () => {
  home = await mkdtemp(path.join(tmpdir(), 'svc-home-'));
  await chmod(home, 0o700);
  root = await mkdtemp(path.join(tmpdir(), 'svc-embedded-root-'));
  await chmod(root, 0o711);
});
after(async () => {
  await rm(home, { recursive: true, force: true });
  await rm(root, { recursive: true, force: true });
});

async function tablesAndDirectory(server: Awaited<ReturnType<typeof startEmbedded>>) {
  const client = new pg.Client({
    host: server.host,
    port: server.port,
    ...server.superuser,
    database: 'postgres',
  });
  await client.connect();
  try {
    const dir = await client.query<{ dir: string }>(
      `SELECT current_setting('data_directory') AS dir`,
    );
    const kept = await client.query(`SELECT 1 FROM pg_tables WHERE tablename = 'kept'`);
    return { dir: dir.rows[0]?.dir ?? '', hasKept: kept.rowCount === 1, client };
  } catch (error) {
    await client.end();
    throw error;
  }
}

test('issue 16 clean machine: a removed and recreated SVC_DATA_DIR starts a new cluster beside the old one, which is left intact', async (t) => {
  const ids = await postgresIds();
  if (!ids) t.diagnostic('not root: the data stays under SVC_DATA_DIR and goes with it');
  const packaged = await packagedBinaries();
  const binaries = { dir: path.join(home, 'node_modules-native'), version: 'orphan-test' };
  await cp(packaged.dir, binaries.dir, { recursive: true, verbatimSymlinks: true });
  const dataDir = path.join(home, '.svc');
  const warnings: unknown[] = [];
  const logger = createLogger('silent');
  const watched = Object.assign(Object.create(logger), {
    warn: (...args: unknown[]) => warnings.push(args),
  });

  const first = await startEmbedded(dataDir, logger, { binaries, runtimeRoot: root });
  const before = await tablesAndDirectory(first);
  await before.client.query('CREATE TABLE kept (v text)').finally(() => before.client.end());
  await first.stop();

  await rm(dataDir, { recursive: true, force: true });
  const second = await startEmbedded(dataDir, watched, { binaries, runtimeRoot: root });
  const after = await tablesAndDirectory(second);
  await after.client.end();
  await second.stop();

  assert.equal(after.hasKept, false, 'a fresh cluster');
  if (ids) {
    assert.ok(before.dir.startsWith(`${root}/data-`), `relocated, got ${before.dir}`);
    assert.match(after.dir, new RegExp(`^${before.dir}-[0-9a-f]{8}$`));
    assert.ok((await stat(path.join(before.dir, 'PG_VERSION'))).isFile(), 'old cluster kept');
    assert.deepEqual(warnings, [
      [
        { orphan: before.dir, dir: after.dir },
        'embedded postgres: the cluster of a removed SVC_DATA_DIR was left in place; starting a new one beside it (delete the old one when it is no longer needed)',
      ],
    ]);
    const state = JSON.parse(await readFile(path.join(dataDir, 'embedded.json'), 'utf8'));
    assert.equal(state.pgDir, after.dir, 'recorded, so the next start reuses it');
  }

  // The next start reuses the new cluster and warns no more.
  const third = await startEmbedded(dataDir, watched, { binaries, runtimeRoot: root });
  const again = await tablesAndDirectory(third);
  await again.client.end();
  await third.stop();
  assert.equal(again.dir, after.dir);
  assert.equal(warnings.length, ids ? 1 : 0);
});
