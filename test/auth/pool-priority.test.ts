import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { createPasswordHasher } from '../../src/auth/passwords.ts';
import { poolNiceFor } from '../../src/auth/pool-priority.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

/** The nice value of every libuv pool thread of this process (field 19 of its stat line). */
function poolNiceness(): number[] {
  return readdirSync('/proc/self/task').flatMap((task) => {
    const comm = readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim();
    if (comm !== 'libuv-worker') return [];
    const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
    // Fields after the parenthesised command name: state is field 3, nice field 19.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return [Number(fields[16])];
  });
}

/** The nice value of the main thread (the event loop). */
function loopNiceness(): number {
  const main = readFileSync('/proc/self/stat', 'utf8');
  return Number(main.slice(main.lastIndexOf(')') + 2).split(' ')[16]);
}

// docs/auth.md "Hashing is bounded": under a sign-in flood the hashes fill every core, and the
// event loop (/healthz, the API, event streams) must still be scheduled first. Relative to the
// loop: the suite itself may run niced (a CI runner, `nice npm test`).
test('§5.4.1 after the first hash the hashing threads run 10 nice steps below the event loop, the loop keeps its own', async () => {
  const loopBefore = loopNiceness();
  const hasher = createPasswordHasher({ concurrency: 2, queue: 4, params: TEST_HASH_PARAMS });
  await hasher.hash('a password of some length');
  const pool = poolNiceness();
  assert.ok(pool.length > 0, 'the pool threads exist once a hash has run');
  const expected = poolNiceFor(loopBefore);
  assert.ok(expected > loopBefore || loopBefore === 19, 'the pool goes below the loop');
  assert.deepEqual(
    pool.filter((nice) => nice !== expected),
    [],
    `every pool thread is lowered to ${expected} (the loop runs at ${loopBefore})`,
  );
  assert.equal(loopNiceness(), loopBefore, 'the loop keeps its own nice value');
});

test("§5.4.1 the pool's nice value follows the loop's and stays within 0–19", () => {
  assert.equal(poolNiceFor(0), 10);
  assert.equal(poolNiceFor(5), 15);
  assert.equal(poolNiceFor(10), 19);
  assert.equal(poolNiceFor(19), 19);
});
