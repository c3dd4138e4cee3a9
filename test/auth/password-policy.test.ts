import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { passwordWeakness } from '../../src/auth/password-policy.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let userId: string;
const PASSWORD = 'correct horse battery';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  userId = await seedUser(db, api.hasher, {
    email: 'an@mssp.test',
    role: 'analyst',
    password: PASSWORD,
  });
});
after(async () => {
  await api.close();
  await db.drop();
});

async function credential(): Promise<string | undefined> {
  const { rows } = await db.pools.mssp.query<{ password_hash: string }>(
    'SELECT password_hash FROM password_credentials WHERE user_id = $1',
    [userId],
  );
  return rows[0]?.password_hash;
}

test('issue 10 item 6 / NIST SP 800-63B §5.1.1.2: a whitespace-only or common new password is 400 password_too_weak and changes nothing', async () => {
  const user = client(api);
  assert.equal((await user.login('an@mssp.test', PASSWORD)).status, 200);
  const hash = await credential();
  const cases: [string, string, string | undefined][] = [
    [' '.repeat(12), 'password_too_weak', 'whitespace_only'],
    ['\u00a0\u3000\u2003 \u200b\u2060 \u3000    ', 'password_too_weak', 'whitespace_only'],
    ['1qaz2wsx3edc', 'password_too_weak', 'common_password'], // on the list as it is
    ['ISeeDeadPeople', 'password_too_weak', 'common_password'], // case does not help
    ['Password1234!', 'password_too_weak', 'common_password'], // a listed word padded
    ['  iloveyou 2024 ', 'password_too_weak', 'common_password'],
    // Issue 16 item 5: control characters are refused by the contract (the document says so).
    ['correct horse\tbattery', 'validation_failed', undefined],
    ['correct horse battery\n', 'validation_failed', undefined],
    ['correct horse battery\u0085', 'validation_failed', undefined],
  ];
  for (const [next, code, reason] of cases) {
    const res = await user.call('POST', '/api/auth/password/change', {
      current_password: PASSWORD,
      new_password: next,
    });
    assert.deepEqual(
      [res.status, res.body?.code, res.body?.reason],
      [400, code, reason],
      JSON.stringify(next),
    );
  }
  assert.equal(await credential(), hash);
  const good = await user.call('POST', '/api/auth/password/change', {
    current_password: PASSWORD,
    new_password: 'violet tractor unkempt',
  });
  assert.equal(good.status, 200);
  assert.notEqual(await credential(), hash);
});

test('issue 10 item 6: the policy refuses the padded word, not every password that contains one', () => {
  assert.equal(passwordWeakness('x7#9!2$4@1&3'), undefined); // a one-letter "word"
  assert.equal(passwordWeakness('dragonfly over the pond'), undefined);
  assert.equal(passwordWeakness('my-password-is-long-enough'), undefined);
  assert.equal(passwordWeakness('dragon!!2024!!'), 'common_password');
});
