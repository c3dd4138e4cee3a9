import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createFairShare } from '../../src/auth/fair-share.ts';
import { createRateLimiter, RATE_LIMIT_CAPACITY } from '../../src/auth/rate-limit.ts';
import { HASHES_PER_ADDRESS } from '../../src/http/auth/routes.ts';
import { addressBlock } from '../../src/http/client-address.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
const PASSWORD = 'correct horse battery';
const WRONG = 'wrong wrong wrong';
/** The test API's peer is 127.0.0.1; trusting it lets X-Forwarded-For name the client. */
const VIA_PROXY = { trustedProxyCidrs: ['127.0.0.0/8'] };

before(async () => {
  db = await createTestDatabase();
});
after(() => db.drop());

const from = (api: TestApi, address: string) => client(api, { 'x-forwarded-for': address });

function manualClock() {
  let t = 1_000_000;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

test('issue 10 item 4: after 200,000 distinct keys the limiter holds at most its capacity and new keys fail closed', () => {
  const clock = manualClock();
  const limiter = createRateLimiter(3, clock.now);
  for (let i = 0; i < 3; i++) assert.equal(limiter.hit('email:victim@example.test').allowed, true);
  let refused = 0;
  for (let i = 0; i < 200_000; i++) {
    if (!limiter.hit(`email:fresh-${i}@example.test`).allowed) refused++;
  }
  assert.equal(limiter.stats().keys, RATE_LIMIT_CAPACITY);
  assert.equal(refused, 200_000 - (RATE_LIMIT_CAPACITY - 1), 'keys beyond the cap are refused');
  const victim = limiter.hit('email:victim@example.test');
  assert.equal(victim.allowed, false, "a flood of fresh keys did not evict the victim's counter");
  assert.ok(victim.retryAfter > 0 && victim.retryAfter <= 900, `Retry-After ${victim.retryAfter}`);
  const full = limiter.hit('email:newcomer@example.test');
  assert.equal(full.allowed, false);
  assert.ok(full.retryAfter > 0 && full.retryAfter <= 900, 'refused until the oldest window ends');
  clock.advance(15 * 60 * 1000);
  assert.equal(limiter.hit('email:newcomer@example.test').allowed, true, 'room again');
});

test('issue 10 item 4: expired windows are evicted (test clock)', () => {
  const clock = manualClock();
  const limiter = createRateLimiter(5, clock.now);
  for (let i = 0; i < 1000; i++) limiter.hit(`ip:10.0.${i >> 8}.${i & 255}`);
  clock.advance(10 * 60 * 1000);
  for (let i = 0; i < 10; i++) limiter.hit(`ip:192.0.2.${i}`);
  assert.deepEqual([limiter.stats().keys, limiter.stats().evicted], [1010, 0], 'still in window');
  clock.advance(5 * 60 * 1000);
  limiter.hit('ip:198.51.100.1');
  assert.deepEqual(
    [limiter.stats().keys, limiter.stats().evicted],
    [11, 1000],
    'the first thousand ended',
  );
  clock.advance(10 * 60 * 1000);
  limiter.hit('ip:198.51.100.2');
  assert.deepEqual([limiter.stats().keys, limiter.stats().evicted], [2, 1010]);
});

test('issue 10 item 4: the work per hit does not grow with the number of keys', () => {
  const clock = manualClock();
  const limiter = createRateLimiter(100, clock.now, { windowMs: 60_000 });
  for (let i = 0; i < RATE_LIMIT_CAPACITY; i++) limiter.hit(`k${i}`);
  // A full table, nothing expired: each hit looks at one window, however many there are.
  const full = limiter.stats();
  for (let i = 0; i < 1000; i++) limiter.hit(i % 2 === 0 ? `k${i}` : `new${i}`);
  assert.equal(limiter.stats().examined - full.examined, 1000);
  // Keys expiring continuously: over the run, windows looked at = evictions + hits, so each
  // hit costs O(1) amortised (a whole-map scan would add the table size on every hit).
  let hits = 1000 + RATE_LIMIT_CAPACITY;
  for (let i = 0; i < 200_000; i++) {
    clock.advance(1);
    limiter.hit(`rolling${i}`);
    hits++;
  }
  const { examined, evicted, keys } = limiter.stats();
  assert.ok(evicted > 0 && keys <= RATE_LIMIT_CAPACITY);
  assert.ok(examined <= evicted + hits, `examined ${examined}, evicted ${evicted}, hits ${hits}`);
});

test('issue 10 item 4: an IPv6 client counts as its /64, an IPv4-mapped address as IPv4', () => {
  assert.equal(addressBlock('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.equal(addressBlock('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
  assert.equal(addressBlock('2001:db8::1:2:3:4:5'), '2001:db8:0:1::/64');
  assert.equal(addressBlock('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(addressBlock('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(addressBlock('203.0.113.7'), '203.0.113.7');
});

test('issue 10 item 4: a fair share is held only while its work runs', () => {
  const share = createFairShare(2);
  const first = share.acquire('a');
  const second = share.acquire('a');
  assert.ok(first && second);
  assert.equal(share.acquire('a'), undefined, 'a third place for the same key is refused');
  assert.ok(share.acquire('b'), 'another key is unaffected');
  first();
  first();
  assert.ok(share.acquire('a'), 'a released place is free again, released once only');
  assert.equal(share.acquire('a'), undefined);
});

test('issue 10 item 4: attempts the per-IP limit refused do not count against the email', async () => {
  const api = await startTestApi(db, {
    ...VIA_PROXY,
    hash: { params: TEST_HASH_PARAMS },
    auth: { loginRateLimitPerIp: 3, loginRateLimitPerEmail: 5 },
  });
  try {
    await seedUser(db, api.hasher, {
      email: 'victim@example.test',
      role: 'analyst',
      password: PASSWORD,
    });
    const attacker = from(api, '203.0.113.7');
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      statuses.push((await attacker.login('victim@example.test', WRONG)).status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
    const victim = await from(api, '198.51.100.20').login('victim@example.test', PASSWORD);
    assert.equal(victim.status, 200, JSON.stringify(victim.body));
  } finally {
    await api.close();
  }
});

test('issue 10 item 4: the per-IP limit counts an IPv6 /64 as one client', async () => {
  const api = await startTestApi(db, {
    ...VIA_PROXY,
    hash: { params: TEST_HASH_PARAMS },
    auth: { loginRateLimitPerIp: 3, loginRateLimitPerEmail: 1000 },
  });
  try {
    const statuses: number[] = [];
    for (let i = 1; i <= 4; i++) {
      const res = await from(api, `2001:db8:7:7::${i}`).login(`v6-${i}@example.test`, WRONG);
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 429]);
    const other = await from(api, '2001:db8:7:8::1').login('v6-other@example.test', WRONG);
    assert.equal(other.status, 401, 'the next /64 has its own budget');
  } finally {
    await api.close();
  }
});

test('issue 10 item 4: a flood from one address cannot starve a sign-in from another address', async () => {
  const api = await startTestApi(db, {
    ...VIA_PROXY,
    hash: { concurrency: 1, queue: 2 },
    auth: { loginRateLimitPerIp: 1_000_000, loginRateLimitPerEmail: 1_000_000 },
  });
  try {
    await seedUser(db, api.hasher, {
      email: 'bystander@example.test',
      role: 'analyst',
      password: PASSWORD,
    });
    const flooder = from(api, '203.0.113.66');
    const answers: { status: number; code: string | undefined; retryAfter: string | null }[] = [];
    let done = false;
    let saturated: () => void = () => undefined;
    const saturation = new Promise<void>((resolve) => {
      saturated = resolve;
    });
    // Eight parallel senders, each sending again as soon as it is answered, until the
    // bystander is through: the hash queue (1 running + 2 waiting) is always under pressure.
    const worker = async (w: number) => {
      for (let i = 0; !done; i++) {
        const res = await flooder.login(`flood-${w}-${i}@example.test`, WRONG);
        answers.push({
          status: res.status,
          code: res.body.code,
          retryAfter: res.headers.get('retry-after'),
        });
        if (res.status !== 401) saturated();
      }
    };
    const workers = Array.from({ length: 8 }, (_, w) => worker(w));
    await saturation;
    const bystander = await from(api, '198.51.100.30').login('bystander@example.test', PASSWORD);
    done = true;
    await Promise.all(workers);
    assert.equal(bystander.status, 200, JSON.stringify(bystander.body));
    const refused = answers.filter((a) => a.status !== 401);
    assert.ok(refused.length > 0);
    for (const r of refused) {
      assert.deepEqual(r, { status: 429, code: 'rate_limited', retryAfter: '1' });
    }
    assert.ok(
      answers.length - refused.length >= 1,
      `the flooder still gets its ${HASHES_PER_ADDRESS} places`,
    );
  } finally {
    await api.close();
  }
});
