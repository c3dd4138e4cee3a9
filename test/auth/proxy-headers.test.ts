import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/log/index.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

/**
 * Issue 27 item 2: the proxy-mode trust boundary from the attacker's side. A peer outside
 * SVC_TRUSTED_PROXY_CIDRS sends identity headers with whatever else might distract the server;
 * the trusted proxy forwards an email header with something invisible around an address; an
 * operator starts proxy mode with no trusted CIDRs at all.
 */

/** Every JSON log line the API writes, at warn and above. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: createLogger('warn', stream) };
}

let db: TestDatabase;
let trusted: TestApi;
let untrusted: TestApi;
const trustedLog = capture();
const untrustedLog = capture();
let tenant: string;
let analystId: string;

before(async () => {
  db = await createTestDatabase();
  // The test client connects from 127.0.0.1: inside the CIDRs for one server, outside for the other.
  trusted = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: ['127.0.0.0/8'],
    logger: trustedLog.logger,
  });
  untrusted = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: ['10.0.0.0/8'],
    logger: untrustedLog.logger,
  });
  tenant = await createTenant(db.pools.app);
  analystId = await seedUser(db, trusted.hasher, { email: 'ana@mssp.test', role: 'analyst' });
  await seedUser(db, trusted.hasher, {
    email: 'cv@acme.test',
    role: 'customer_viewer',
    tenantId: tenant,
  });
});
after(async () => {
  await trusted.close();
  await untrusted.close();
  await db.drop();
});

/** Log lines with this message written since `from` (an index into the lines). */
function logged(log: ReturnType<typeof capture>, msg: string, from: number) {
  return log.lines.slice(from).filter((line) => line.msg === msg);
}

test('issue 27 item 2b: identity headers from an untrusted peer are 403 untrusted_proxy and logged, whatever Authorization the request carries', async () => {
  // A token this very server would accept: the headers still decide the answer.
  const { token } = await untrusted.tokens.mintMsspUser({ userId: analystId, role: 'analyst' });
  const authorizations = [
    'Basic YW5hQG1zc3AudGVzdDpwdw==',
    'Bearer',
    'Bearer not a token',
    'bearer x.y.z',
    '',
    `Bearer ${token}`,
  ];
  for (const path of ['/api/mssp/tenants', '/api/tenant/overview']) {
    for (const authorization of authorizations) {
      const from = untrustedLog.lines.length;
      const res = await client(untrusted, {
        'X-Forwarded-Email': 'ana@mssp.test',
        authorization,
      }).call('GET', path);
      const label = `${path} with Authorization ${JSON.stringify(authorization.slice(0, 12))}`;
      assert.deepEqual([res.status, res.body.code], [403, 'untrusted_proxy'], label);
      const lines = logged(untrustedLog, 'identity headers from an untrusted peer rejected', from);
      assert.equal(lines.length, 1, `${label} is logged`);
      assert.deepEqual(
        [lines[0]?.level, lines[0]?.claimed_email, lines[0]?.authorization, lines[0]?.headers],
        ['warn', 'ana@mssp.test', true, ['X-Forwarded-Email']],
        label,
      );
    }
  }
  // A state-changing request with a token and only the groups header: the same answer.
  const post = await client(untrusted, {
    'X-Forwarded-Groups': 'admins',
    authorization: `Bearer ${token}`,
  }).call('POST', `/api/mssp/impersonate/${tenant}`, { reason: 'spoof' });
  assert.deepEqual([post.status, post.body.code], [403, 'untrusted_proxy']);
  // Without identity headers the token is an ordinary credential, from any peer.
  const bearer = await client(untrusted, { authorization: `Bearer ${token}` }).call(
    'GET',
    '/api/mssp/tenants',
  );
  assert.equal(bearer.status, 200);
  const malformed = await client(untrusted, { authorization: 'Basic x' }).call(
    'GET',
    '/api/mssp/tenants',
  );
  assert.deepEqual([malformed.status, malformed.body.code], [401, 'invalid_token']);
});

test('issue 27 item 2b: from the trusted proxy a bearer token decides, not the headers beside it', async () => {
  const ana = client(trusted, { 'X-Forwarded-Email': 'ana@mssp.test' });
  const minted = await ana.call('POST', `/api/mssp/impersonate/${tenant}`, {
    reason: 'view as customer',
  });
  assert.equal(minted.status, 200);
  const token = String(minted.body.token);
  // The proxy adds its headers to the impersonation token's requests too: the token's
  // tenant limit holds (a list of all tenants is refused), its own tenant is served.
  const list = await ana.call('GET', '/api/mssp/tenants', undefined, {
    authorization: `Bearer ${token}`,
  });
  assert.deepEqual([list.status, list.body.code], [403, 'outside_impersonated_tenant']);
  const own = await ana.call('GET', `/api/mssp/tenants/${tenant}`, undefined, {
    authorization: `Bearer ${token}`,
  });
  assert.equal(own.status, 200);
  // A broken token is refused, never quietly replaced by the headers' identity.
  const broken = await ana.call('GET', '/api/mssp/tenants', undefined, {
    authorization: 'Bearer not.a.token',
  });
  assert.deepEqual([broken.status, broken.body.code], [401, 'invalid_token']);
});

test('issue 27 item 2c: a proxy email header that is not exactly an address is refused and logged, never trimmed into an account', async () => {
  // Header values travel as bytes; Node reads them as Latin-1, so `\u00e2\u0080\u008b` is
  // what a UTF-8 zero-width space arrives as.
  const values = [
    '\u00a0ana@mssp.test',
    'ana@mssp.test\u00a0',
    'ANA@MSSP.TEST\u00a0',
    '\u00e2\u0080\u008bana@mssp.test',
    'ana@mssp.test\u00e2\u0080\u008b',
    'ana@mssp.test\u0085',
    'ana\u00a0@mssp.test',
    'ana @mssp.test',
    'ana@mssp.test, cv@acme.test',
    'ana@@mssp.test',
    'ana@mssp.test@evil.test',
    '@mssp.test',
    'ana@',
    `${'a'.repeat(250)}@mssp.test`,
  ];
  for (const value of values) {
    const from = trustedLog.lines.length;
    const res = await client(trusted, { 'X-Forwarded-Email': value }).call(
      'GET',
      '/api/mssp/tenants',
    );
    const label = JSON.stringify(value.slice(0, 40));
    assert.deepEqual([res.status, res.body.code], [403, 'invalid_identity_header'], label);
    const lines = logged(trustedLog, 'identity header is not an email address', from);
    assert.equal(lines.length, 1, `${label} is logged`);
    assert.deepEqual(
      [lines[0]?.level, lines[0]?.header, lines[0]?.value],
      ['warn', 'X-Forwarded-Email', value],
      label,
    );
  }
  // ASCII letters are the one thing folded (docs/auth.md "Proxy mode").
  const upper = await client(trusted, { 'X-Forwarded-Email': 'Ana@MSSP.test' }).call(
    'GET',
    '/api/mssp/tenants',
  );
  assert.equal(upper.status, 200);
  const customer = await client(trusted, { 'X-Forwarded-Email': 'cv@acme.test' }).call(
    'GET',
    '/api/tenant/overview',
  );
  assert.equal(customer.status, 200);
});

test('issue 27 item 2a: proxy mode with no trusted CIDRs says so at start and on /healthz', async () => {
  const log = capture();
  const blind = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: [],
    logger: log.logger,
  });
  try {
    const warned = log.lines.filter((line) => line.code === 'no_trusted_proxies');
    assert.equal(warned.length, 1);
    assert.equal(warned[0]?.level, 'warn');
    assert.match(String(warned[0]?.msg), /SVC_TRUSTED_PROXY_CIDRS is empty/);
    const res = await fetch(`${blind.url}/healthz`);
    // Still ready: the adapters' and workers' tokens are served; the warning is for the operator.
    assert.equal(res.status, 200);
    const health = (await res.json()) as { status: string; warnings?: { code: string }[] };
    assert.equal(health.status, 'ok');
    assert.deepEqual(
      health.warnings?.map((w) => w.code),
      ['no_trusted_proxies'],
    );
    // What the warning is about: every person is refused.
    const refused = await client(blind, { 'X-Forwarded-Email': 'ana@mssp.test' }).call(
      'GET',
      '/api/mssp/tenants',
    );
    assert.deepEqual([refused.status, refused.body.code], [403, 'untrusted_proxy']);
  } finally {
    await blind.close();
  }
  // A configured proxy, and internal mode (which reads no CIDRs for identity), have none.
  const configured = (await (await fetch(`${trusted.url}/healthz`)).json()) as object;
  assert.equal('warnings' in configured, false);
  assert.equal(
    trustedLog.lines.some((line) => line.code === 'no_trusted_proxies'),
    false,
  );
  const internal = await startTestApi(db, { trustedProxyCidrs: [] });
  try {
    assert.equal(
      'warnings' in ((await (await fetch(`${internal.url}/healthz`)).json()) as object),
      false,
    );
  } finally {
    await internal.close();
  }
});
