import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, test } from 'node:test';
import { DEVICE_COOKIE_MAX_AGE_S, DEVICE_FAILURE_LIMIT } from '../../src/auth/device-cookie.ts';
import {
  createPasswordHasher,
  HasherBusyError,
  type HashLane,
  type HashPlace,
} from '../../src/auth/passwords.ts';
import { LOCKOUT_THRESHOLD } from '../../src/domains/sessions/session-service.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

// Issue 27 item 6: a distributed flood must not lock out a browser that signed in before
// (OWASP device cookies, docs/auth.md "Device cookie").

let db: TestDatabase;
let api: TestApi;
const PASSWORD = 'correct horse battery';
/** The hasher of `api`: one computing slot, one anonymous place waiting. */
const HASH = { concurrency: 1, queue: 1, params: TEST_HASH_PARAMS };

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, {
    hash: HASH,
    auth: { loginRateLimitPerIp: 1000, loginRateLimitPerEmail: 1000 },
    trustedProxyCidrs: ['127.0.0.0/8'],
  });
});
after(async () => {
  await api.close();
  await db.drop();
});

let n = 0;
async function account() {
  n++;
  const email = `device-${n}@example.test`;
  await seedUser(db, api.hasher, { email, role: 'analyst', password: PASSWORD });
  return email;
}

/** Signs in from `address` and returns the svc_device Set-Cookie line. */
async function signInFor(target: TestApi, email: string, address = '198.51.100.1') {
  const res = await fetch(`${target.url}/api/auth/login`, {
    method: 'POST',
    headers: {
      origin: target.origin,
      'content-type': 'application/json',
      'x-forwarded-for': address,
    },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  assert.equal(res.status, 200);
  const line = res.headers.getSetCookie().find((c) => c.startsWith('svc_device='));
  assert.ok(line, 'a device cookie is set');
  return line;
}

const cookieValue = (line: string) => /^svc_device=([^;]+)/.exec(line)?.[1] ?? '';

/** A sign-in from `address` carrying `device` (a cookie value) or none. */
async function attempt(email: string, password: string, address: string, device?: string) {
  return client(api, {
    'x-forwarded-for': address,
    ...(device === undefined ? {} : { cookie: `svc_device=${device}` }),
  }).login(email, password);
}

/**
 * Holds every anonymous place of the hasher (as a flood's attempts waiting for their hash
 * would), deterministically: nothing is computing, yet no anonymous attempt is admitted.
 */
function fillAnonymousLane(): HashPlace[] {
  const held: HashPlace[] = [];
  for (;;) {
    try {
      held.push(api.hasher.reserve('anonymous'));
    } catch (error) {
      assert.ok(error instanceof HasherBusyError);
      return held;
    }
  }
}

async function whileFlooded<T>(work: () => Promise<T>): Promise<T> {
  const held = fillAnonymousLane();
  assert.equal(held.length, HASH.concurrency + HASH.queue);
  try {
    return await work();
  } finally {
    for (const place of held) place.release();
  }
}

test('issue 27 item 6: sign-in sets svc_device: signed, HttpOnly, Secure, SameSite=Strict, Path=/api/auth, one year', async () => {
  const email = await account();
  const line = await signInFor(api, email);
  const [pair, ...attributes] = line.split('; ');
  assert.deepEqual(attributes, [
    `Max-Age=${DEVICE_COOKIE_MAX_AGE_S}`,
    'Path=/api/auth',
    'HttpOnly',
    'Secure',
    'SameSite=Strict',
  ]);
  const [body, signature] = (pair ?? '').slice('svc_device='.length).split('.');
  const payload = JSON.parse(Buffer.from(body ?? '', 'base64url').toString()) as Record<
    string,
    unknown
  >;
  assert.equal(payload.sub, email);
  assert.match(String(payload.n), /^[A-Za-z0-9_-]{22}$/);
  assert.equal(payload.iat, Math.floor(api.clock.now().getTime() / 1000));
  assert.equal(Buffer.from(signature ?? '', 'base64url').length, 32, 'HMAC-SHA-256');
  // A failed attempt sets none.
  const failed = await attempt(email, 'wrong wrong wrong', '198.51.100.2');
  assert.equal(failed.status, 401);
  assert.deepEqual(failed.headers.getSetCookie(), []);
});

test('issue 27 item 6: a valid device cookie is admitted while the anonymous hash queue is full', async () => {
  const email = await account();
  const device = cookieValue(await signInFor(api, email));
  await whileFlooded(async () => {
    const anonymous = await attempt(email, PASSWORD, '203.0.113.7');
    assert.deepEqual([anonymous.status, anonymous.body.code], [503, 'auth_busy']);
    const trusted = await attempt(email, PASSWORD, '203.0.113.8', device);
    assert.equal(trusted.status, 200);
    // The device keeps its cookie: no second one is issued.
    assert.equal(
      trusted.headers.getSetCookie().filter((c) => c.startsWith('svc_device=')).length,
      0,
    );
  });
});

test('issue 27 item 6: a forged, tampered, other-user or expired device cookie is anonymous', async () => {
  const email = await account();
  const other = await account();
  const device = cookieValue(await signInFor(api, email));
  const othersDevice = cookieValue(await signInFor(api, other));
  const [body = '', signature = ''] = device.split('.');
  const payload = JSON.parse(Buffer.from(body, 'base64url').toString()) as Record<string, unknown>;
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  // The attacker's own forgeries: the same payload re-signed with a key they chose, a payload
  // naming the victim under the genuine signature of another, and a cookie of another svc.
  const forgedBody = encode({ ...payload });
  const forged = `${forgedBody}.${createHmac('sha256', 'guessed').update(forgedBody).digest('base64url')}`;
  const reSubjected = `${encode({ ...payload, sub: email })}.${othersDevice.split('.')[1]}`;
  const stranger = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  let foreign: string;
  try {
    foreign = cookieValue(await signInFor(stranger, email));
  } finally {
    await stranger.close();
  }
  const flipped = `${body}.${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BA' : 'AA'}`;
  const cases: [string, string][] = [
    ['forged with a guessed key', forged],
    ['signed by another installation', foreign],
    ['tampered payload', reSubjected],
    ['tampered signature', flipped],
    ['no signature', body],
    ["another user's", othersDevice],
    ['oversized', `${'A'.repeat(5000)}.${signature}`],
    ['not base64', '%%%.!!!'],
  ];
  await whileFlooded(async () => {
    for (const [what, cookie] of cases) {
      const res = await attempt(email, PASSWORD, '203.0.113.9', cookie);
      assert.deepEqual([res.status, res.body.code], [503, 'auth_busy'], what);
    }
    api.clock.advance(DEVICE_COOKIE_MAX_AGE_S * 1000 + 1000);
    try {
      const expired = await attempt(email, PASSWORD, '203.0.113.9', device);
      assert.deepEqual([expired.status, expired.body.code], [503, 'auth_busy'], 'expired');
    } finally {
      api.clock.advance(-(DEVICE_COOKIE_MAX_AGE_S * 1000 + 1000));
    }
    const genuine = await attempt(email, PASSWORD, '203.0.113.9', device);
    assert.equal(genuine.status, 200, 'the genuine cookie, for contrast');
  });
});

test('issue 27 item 6: a device cookie has its own failure budget, then it is anonymous', async () => {
  const email = await account();
  const device = cookieValue(await signInFor(api, email));
  for (let i = 0; i < DEVICE_FAILURE_LIMIT; i++) {
    // Each from a fresh address: the budget is the device's, not the address's.
    const res = await attempt(email, 'wrong wrong wrong', `192.0.2.${i + 1}`, device);
    assert.equal(res.status, 401);
  }
  await whileFlooded(async () => {
    const spent = await attempt(email, PASSWORD, '192.0.2.200', device);
    assert.deepEqual([spent.status, spent.body.code], [503, 'auth_busy']);
  });
  api.clock.advance(15 * 60 * 1000);
  await whileFlooded(async () => {
    const renewed = await attempt(email, PASSWORD, '192.0.2.201', device);
    assert.equal(renewed.status, 200, 'trusted again in the next window');
  });
});

test('§5.4.3 a running lock refuses the right password from a trusted device too; the device lane is no way past it', async () => {
  const email = await account();
  const device = cookieValue(await signInFor(api, email));
  for (let i = 0; i < LOCKOUT_THRESHOLD; i++) {
    await attempt(email, 'wrong wrong wrong', `198.18.0.${i + 1}`);
  }
  const locked = await attempt(email, PASSWORD, '198.18.1.1');
  assert.deepEqual([locked.status, locked.body.code], [423, 'account_locked']);
  const trusted = await attempt(email, PASSWORD, '198.18.1.2', device);
  assert.deepEqual([trusted.status, trusted.body.code], [423, 'account_locked']);
  const still = await attempt(email, PASSWORD, '198.18.1.3');
  assert.deepEqual([still.status, still.body.code], [423, 'account_locked'], 'the lock stays');
});

test('issue 27 item 6: a trusted device is not held to the per-address limits', async () => {
  const limited = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    auth: { loginRateLimitPerIp: 1, loginRateLimitPerEmail: 1000 },
    trustedProxyCidrs: ['127.0.0.0/8'],
  });
  try {
    const email = `device-limits@example.test`;
    await seedUser(db, limited.hasher, { email, role: 'analyst', password: PASSWORD });
    const device = cookieValue(await signInFor(limited, email, '198.51.100.50'));
    const headers = { 'x-forwarded-for': '198.51.100.50' };
    const anonymous = await client(limited, headers).login(email, PASSWORD);
    assert.deepEqual([anonymous.status, anonymous.body.code], [429, 'rate_limited']);
    const trusted = await client(limited, { ...headers, cookie: `svc_device=${device}` }).login(
      email,
      PASSWORD,
    );
    assert.equal(trusted.status, 200);
  } finally {
    await limited.close();
  }
});

test('issue 27 item 6: the hasher serves the device lane before waiting anonymous attempts', async () => {
  const hasher = createPasswordHasher({ concurrency: 1, queue: 4 });
  const stored = await hasher.hash(PASSWORD);
  const order: string[] = [];
  const run = (lane: HashLane, name: string) => {
    const place = hasher.reserve(lane);
    return place.verify(stored, PASSWORD).then(() => {
      order.push(name);
      place.release();
    });
  };
  // The first computes; the rest queue behind it in the same tick, so the order is decided
  // by the scheduler alone, not by timing.
  await Promise.all([
    run('anonymous', 'a1'),
    run('anonymous', 'a2'),
    run('anonymous', 'a3'),
    run('device', 'd1'),
  ]);
  assert.deepEqual(order, ['a1', 'd1', 'a2', 'a3']);
  // The anonymous lane full (1 computing + 4 waiting): the device lane still admits.
  const held = Array.from({ length: 5 }, () => hasher.reserve('anonymous'));
  assert.throws(() => hasher.reserve('anonymous'), HasherBusyError);
  const place = hasher.reserve('device');
  place.release();
  for (const h of held) h.release();
});
