import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { clientConfig } from '../../src/db/target.ts';
import { holdWrites } from '../../src/db/unit-of-work.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// The unit of work (docs/architecture.md "One transaction per authenticated request") leans on
// two things of node-postgres: pipeline mode (public, `pipeline: true`) and, to send a unit's
// BEGIN and its first statement in one write, the socket behind pg's internal
// `client.connection.stream`. Neither failing would give a wrong answer, only a slower one, so
// nothing else would notice a pg upgrade that changes them: this file does.

const UPGRADE =
  'a pg upgrade changed what src/db/unit-of-work.ts relies on: find the new place in pg ' +
  '(or drop the optimisation) and update holdWrites / the pipelined branch, see docs/architecture.md "Why pg"';

let db: TestDatabase;
let pool: pg.Pool;
before(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ ...clientConfig(db.target, 'app'), max: 1, pipeline: true });
});
after(async () => {
  await pool.end();
  await db.drop();
});

test('pg internals: a pool made with pipeline: true hands out clients in pipeline mode', async () => {
  const client = await pool.connect();
  try {
    assert.equal(client.pipeline, true, UPGRADE);
  } finally {
    client.release();
  }
});

test('pg internals: holdWrites holds the connection socket for one tick, and both statements go out after it', async () => {
  const client = await pool.connect();
  try {
    const socket = holdWrites(client);
    assert.ok(socket, `holdWrites found no socket at client.connection.stream: ${UPGRADE}`);
    assert.equal(socket.writableCorked, 1, UPGRADE);
    const first = client.query<{ a: number }>('SELECT 1 AS a');
    const second = client.query<{ b: number }>('SELECT 2 AS b');
    assert.ok(socket.writableLength > 0, `the statements did not wait in that socket: ${UPGRADE}`);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    assert.equal(socket.writableCorked, 0, 'the socket is released after the tick');
    assert.deepEqual(
      [(await first).rows[0]?.a, (await second).rows[0]?.b],
      [1, 2],
      'both statements were answered, in order',
    );
  } finally {
    client.release();
  }
});
