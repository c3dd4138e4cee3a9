import assert from 'node:assert/strict';
import { chmod, cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { startEmbedded } from '../../src/db/embedded.ts';
import { reachable } from '../../src/db/embedded-home.ts';
import {
  EmbeddedStartError,
  packagedBinaries,
  postgresIds,
} from '../../src/db/postgres-process.ts';
import { createLogger } from '../../src/log/index.ts';

/**
 * Issue 16 item 1: a checkout in a directory other users cannot traverse (under /root, mode
 * 700). As root, PostgreSQL runs as the OS user `postgres`, which could reach neither the
 * binaries in node_modules nor the data directory: `initdb EACCES` and an unhandled 'error'
 * event. Here the checkout is a mode-700 directory holding a copy of the packaged binaries and
 * the data directory, exactly the layout of `/root/svc`.
 */
const silent = createLogger('silent');
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

async function dataDirectory(server: Awaited<ReturnType<typeof startEmbedded>>) {
  const client = new pg.Client({
    host: server.host,
    port: server.port,
    ...server.superuser,
    database: 'postgres',
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ dir: string }>(
      `SELECT current_setting('data_directory') AS dir`,
    );
    return { client, dir: rows[0]?.dir ?? '' };
  } catch (error) {
    await client.end();
    throw error;
  }
}

test('issue 16 item 1: a checkout the postgres user cannot traverse starts, keeps its data and restarts', async () => {
  const packaged = await packagedBinaries();
  const binaries = { dir: path.join(home, 'node_modules-native'), version: 'test-copy' };
  await cp(packaged.dir, binaries.dir, { recursive: true, verbatimSymlinks: true });
  const dataDir = path.join(home, '.svc');
  const ids = await postgresIds();

  let server = await startEmbedded(dataDir, silent, { binaries, runtimeRoot: root });
  let { client, dir } = await dataDirectory(server);
  try {
    await client.query('CREATE TABLE kept (v text)');
    await client.query(`INSERT INTO kept VALUES ('before restart')`);
  } finally {
    await client.end();
    await server.stop();
  }

  if (ids) {
    // The precondition of the defect holds: the checkout is closed to the server's user.
    assert.equal(await reachable(binaries.dir, ids), false);
    assert.equal(await reachable(dataDir, ids), false);
    assert.ok(dir.startsWith(`${root}/data-`), `relocated data directory, got ${dir}`);
    const state = JSON.parse(await readFile(path.join(dataDir, 'embedded.json'), 'utf8'));
    assert.equal(state.pgDir, dir);
    const copy = path.join(root, 'postgres-test-copy');
    assert.equal((await readFile(path.join(copy, '.complete'), 'utf8')).trim(), 'test-copy');
    assert.ok((await stat(path.join(copy, 'lib', 'libpq.so.5'))).isFile(), 'symlinks kept');
    assert.equal((await stat(dir)).uid, ids.uid, 'the data belongs to the postgres user');
  } else {
    // Not root: the server runs as this user, who reaches everything; nothing moves.
    assert.equal(dir, path.join(dataDir, 'pg'));
  }

  server = await startEmbedded(dataDir, silent, { binaries, runtimeRoot: root });
  ({ client, dir: dir } = await dataDirectory(server));
  try {
    const { rows } = await client.query<{ v: string }>('SELECT v FROM kept');
    assert.deepEqual(
      rows.map((r) => r.v),
      ['before restart'],
    );
  } finally {
    await client.end();
    await server.stop();
  }
});

test('issue 16 item 1: binaries that cannot be run end in an error svc reports, not a crash', async () => {
  const broken = path.join(root, 'broken-binaries');
  await mkdir(path.join(broken, 'bin'), { recursive: true });
  // Present but not executable: spawn fails with EACCES, as initdb did under /root.
  for (const program of ['initdb', 'postgres'])
    await writeFile(path.join(broken, 'bin', program), '#!/bin/sh\nexit 0\n', { mode: 0o644 });
  const dataDir = path.join(root, 'broken-data');
  await assert.rejects(
    startEmbedded(dataDir, silent, {
      binaries: { dir: broken, version: 'broken' },
      runtimeRoot: root,
    }),
    (error: unknown) =>
      error instanceof EmbeddedStartError &&
      /cannot run .*initdb: .*EACCES/.test(error.message) &&
      !error.message.includes('\n'),
  );
});
