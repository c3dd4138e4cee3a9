import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parseOptions } from '@node-rs/argon2';
import {
  createPasswordHasher,
  HasherBusyError,
  PASSWORD_PARAMS,
} from '../../src/auth/passwords.ts';
import { client, seedUser, startTestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
const PASSWORD = 'correct horse battery';

before(async () => {
  db = await createTestDatabase();
});
after(() => db.drop());

test('§5.5 login is rate-limited per email, before any database lookup, with Retry-After', async () => {
  const api = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    auth: { loginRateLimitPerEmail: 3, loginRateLimitPerIp: 1000 },
  });
  try {
    for (let i = 0; i < 3; i++) {
      assert.equal(
        (await client(api).login('target@example.test', 'wrong wrong wrong')).status,
        401,
      );
    }
    const before = api.transactions();
    const limited = await client(api).login('Target@Example.test', 'wrong wrong wrong');
    assert.deepEqual([limited.status, limited.body.code], [429, 'rate_limited']);
    const retry = Number(limited.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 900, `Retry-After ${retry}`);
    assert.equal(api.transactions(), before, 'no database transaction for a limited attempt');
    assert.equal(
      (await client(api).login('someone-else@example.test', 'wrong wrong wrong')).status,
      401,
      'other emails unaffected',
    );
    api.clock.advance(15 * 60 * 1000);
    assert.equal(
      (await client(api).login('target@example.test', 'wrong wrong wrong')).status,
      401,
      'window over',
    );
  } finally {
    await api.close();
  }
});

test('§5.5 login is rate-limited per IP independently of the email', async () => {
  const api = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    auth: { loginRateLimitPerEmail: 1000, loginRateLimitPerIp: 4 },
  });
  try {
    for (let i = 0; i < 4; i++) {
      assert.equal(
        (await client(api).login(`user${i}@example.test`, 'wrong wrong wrong')).status,
        401,
      );
    }
    const before = api.transactions();
    const limited = await client(api).login('fresh@example.test', 'wrong wrong wrong');
    assert.deepEqual([limited.status, limited.body.code], [429, 'rate_limited']);
    assert.equal(api.transactions(), before);
  } finally {
    await api.close();
  }
});

test('§5.4.1 a hash with other parameters is verified, then transparently rehashed', async () => {
  const weak = { memoryCost: 8192, timeCost: 2, parallelism: 1, outputLen: 32 };
  const weakHasher = createPasswordHasher({ concurrency: 1, queue: 4, params: weak });
  await seedUser(db, weakHasher, {
    email: 'legacy@example.test',
    role: 'analyst',
    password: PASSWORD,
  });
  const stored = async () =>
    (
      await db.pools.mssp.query<{ h: string }>(
        `SELECT c.password_hash AS h FROM password_credentials c JOIN users u ON u.id = c.user_id WHERE u.email = 'legacy@example.test'`,
      )
    ).rows[0]?.h ?? '';
  assert.equal(parseOptions(await stored()).memoryCost, 8192);
  const api = await startTestApi(db);
  try {
    assert.equal((await client(api).login('legacy@example.test', PASSWORD)).status, 200);
    const after = parseOptions(await stored());
    assert.deepEqual(
      {
        m: after.memoryCost,
        t: after.timeCost,
        p: after.parallelism,
        len: after.outputLen,
        salt: after.saltLen,
      },
      {
        m: PASSWORD_PARAMS.memoryCost,
        t: PASSWORD_PARAMS.timeCost,
        p: PASSWORD_PARAMS.parallelism,
        len: 32,
        salt: 16,
      },
    );
    assert.match(await stored(), /^\$argon2id\$v=19\$m=65536,t=3,p=4\$/);
    assert.equal(
      (await client(api).login('legacy@example.test', PASSWORD)).status,
      200,
      'new hash verifies',
    );
  } finally {
    await api.close();
  }
});

test('§5.4 the hasher bounds concurrent work: excess callers wait, beyond the queue they are refused', async () => {
  const hasher = createPasswordHasher({ concurrency: 2, queue: 3 });
  const stored = await hasher.hash(PASSWORD);
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, hasher.inFlight());
  }, 5);
  const results = await Promise.allSettled(
    Array.from({ length: 8 }, () => hasher.verify(stored, PASSWORD)),
  );
  clearInterval(sampler);
  const fulfilled = results.filter((r) => r.status === 'fulfilled');
  const refused = results.filter(
    (r) => r.status === 'rejected' && r.reason instanceof HasherBusyError,
  );
  assert.equal(fulfilled.length, 5, 'two running plus three queued');
  assert.equal(refused.length, 3);
  assert.ok(peak <= 2, `peak in flight ${peak}`);
});

test('§5.4 a login flood beyond the hash bound gets 503 auth_busy, never unbounded work', async () => {
  // From twelve addresses: one address alone holds at most two places (limiter-bounds.test.ts).
  const api = await startTestApi(db, {
    hash: { concurrency: 1, queue: 2 },
    auth: { loginRateLimitPerIp: 1000, loginRateLimitPerEmail: 1000 },
    trustedProxyCidrs: ['127.0.0.0/8'],
  });
  try {
    await seedUser(db, api.hasher, {
      email: 'flood@example.test',
      role: 'analyst',
      password: PASSWORD,
    });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        client(api, { 'x-forwarded-for': `198.51.100.${i + 1}` }).login(
          'flood@example.test',
          PASSWORD,
        ),
      ),
    );
    const statuses = answers.map((a) => a.status);
    assert.ok(statuses.includes(200), statuses.join());
    const busy = answers.filter((a) => a.status === 503);
    assert.ok(busy.length > 0, statuses.join());
    for (const b of busy) {
      assert.equal(b.body.code, 'auth_busy');
      assert.equal(b.headers.get('retry-after'), '1');
    }
    assert.deepEqual([...new Set(statuses)].sort(), [200, 503]);
  } finally {
    await api.close();
  }
});

test('§5.4 an unknown email costs a full hash: response times do not reveal account existence', async () => {
  const api = await startTestApi(db, {
    hash: { concurrency: 1, queue: 64 },
    auth: { loginRateLimitPerIp: 1000, loginRateLimitPerEmail: 1000 },
  });
  try {
    await seedUser(db, api.hasher, {
      email: 'exists@example.test',
      role: 'analyst',
      password: PASSWORD,
    });
    const time = async (email: string) => {
      const started = performance.now();
      const res = await client(api).login(email, 'definitely wrong');
      assert.equal(res.status, 401);
      return performance.now() - started;
    };
    await time('warmup@example.test');
    const known: number[] = [];
    const unknown: number[] = [];
    // Nine: a tenth failure would lock the account and change the answer.
    for (let i = 0; i < 9; i++) {
      known.push(await time('exists@example.test'));
      unknown.push(await time(`ghost${i}@example.test`));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const spread = (xs: number[]) => {
      const m = median(xs);
      return median(xs.map((x) => Math.abs(x - m)));
    };
    const gap = Math.abs(median(known) - median(unknown));
    // Noise: the larger median absolute deviation of the two samples, at least 5 ms.
    const noise = Math.max(spread(known), spread(unknown), 5);
    assert.ok(
      gap < 3 * noise,
      `median known ${median(known).toFixed(1)} ms vs unknown ${median(unknown).toFixed(1)} ms, noise ${noise.toFixed(1)} ms`,
    );
    // Without the dummy hash the gap would be a whole hash (tens of ms): make sure that is what we measured against.
    assert.ok(
      median(unknown) > 20,
      `an unknown email must cost a hash, took ${median(unknown).toFixed(1)} ms`,
    );
  } finally {
    await api.close();
  }
});

test('§4.1 malformed login bodies get stable problem codes and write nothing', async () => {
  const api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  try {
    const before = (await db.pools.mssp.query('SELECT count(*)::int AS n FROM audit_log')).rows[0];
    const raw = (body: string, type = 'application/json') =>
      fetch(`${api.url}/api/auth/login`, {
        method: 'POST',
        headers: { origin: api.origin, 'content-type': type },
        body,
      }).then(async (r) => [r.status, ((await r.json()) as { code: string }).code]);
    assert.deepEqual(await raw('{"email":'), [400, 'malformed_json']);
    assert.deepEqual(await raw('email=a&password=b', 'application/x-www-form-urlencoded'), [
      415,
      'unsupported_media_type',
    ]);
    assert.deepEqual(await raw('{"email":"a@b.test"}'), [400, 'validation_failed']);
    assert.deepEqual(await raw('{"email":"a@b.test","password":"x","remember":true}'), [
      400,
      'validation_failed',
    ]);
    assert.deepEqual(
      await raw(JSON.stringify({ email: 'a@b.test', password: 'x'.repeat(2 * 1024 * 1024) })),
      [413, 'payload_too_large'],
    );
    const missing = await fetch(`${api.url}/api/auth/login`, {
      method: 'POST',
      headers: { origin: api.origin, 'content-type': 'application/json' },
      body: '{"email":"a@b.test"}',
    });
    assert.deepEqual(((await missing.json()) as { errors: unknown }).errors, [
      { path: '/password', message: 'must have required properties password' },
    ]);
    const after = (await db.pools.mssp.query('SELECT count(*)::int AS n FROM audit_log')).rows[0];
    assert.deepEqual(after, before);
  } finally {
    await api.close();
  }
});
