import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { createPasswordHasher } from '../../src/auth/passwords.ts';
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

// docs/auth.md "Hashing is bounded": under a sign-in flood the hashes fill every core, and the
// event loop (/healthz, the API, event streams) must still be scheduled first.
test('§5.4.1 after the first hash the hashing threads run below the event loop (nice 10), the loop does not', async () => {
  const hasher = createPasswordHasher({ concurrency: 2, queue: 4, params: TEST_HASH_PARAMS });
  await hasher.hash('a password of some length');
  const pool = poolNiceness();
  assert.ok(pool.length > 0, 'the pool threads exist once a hash has run');
  assert.deepEqual(
    pool.filter((nice) => nice !== 10),
    [],
    'every pool thread is lowered',
  );
  const main = readFileSync('/proc/self/stat', 'utf8');
  assert.equal(
    Number(main.slice(main.lastIndexOf(')') + 2).split(' ')[16]),
    0,
    'the loop keeps nice 0',
  );
});
