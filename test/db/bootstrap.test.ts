// svc's Pods start together (an install, a rollout, a node drain: found on the real node, issue 31)
// and each runs the bootstrap; they must not fail each other with "tuple concurrently updated".
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { bootstrapDatabase } from '../../src/db/bootstrap.ts';
import { testServer } from '../support/database.ts';

test('six svc processes bootstrapping one database at once all succeed, and it is there once', async () => {
  const server = testServer();
  const superuser = { ...server.superuser, database: 'postgres' };
  const name = `svc_boot_${randomBytes(4).toString('hex')}`;
  const su = new pg.Client(superuser);
  await su.connect();
  try {
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () =>
        bootstrapDatabase(superuser, name, server.target.credentials),
      ),
    );
    const failed = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
    assert.deepEqual(failed, []);
    const { rows } = await su.query<{ owner: string; connect: boolean; audit_temp: boolean }>(
      `SELECT pg_get_userbyid(datdba) AS owner,
              has_database_privilege('svc_app', datname, 'CONNECT') AS connect,
              has_database_privilege('svc_audit', datname, 'TEMPORARY') AS audit_temp
         FROM pg_database WHERE datname = $1`,
      [name],
    );
    assert.deepEqual(rows, [{ owner: 'svc_admin', connect: true, audit_temp: false }]);
  } finally {
    await su.query(`DROP DATABASE IF EXISTS ${su.escapeIdentifier(name)}`).catch(() => undefined);
    await su.end();
  }
});
