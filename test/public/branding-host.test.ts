import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { INSTALL_BRANDING } from '../../src/domains/branding/branding-service.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

// Issue 15 "Branding": GET /api/auth/branding?host= for the login page, the same lookup as
// GET /api/public/branding (which reads the request's own Host), revealing nothing else.

const CUSTOMERS = '*.customers.example.test';
const ACME = {
  app_name: 'Acme Shield',
  logo_url: 'https://cdn.acme.example/logo.svg',
  primary_color: '#aa0000',
  secondary_color: '#00aa00',
  favicon: '',
};

let db: TestDatabase;
let api: TestApi;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { auth: { customerHostname: CUSTOMERS } });
  const acme = await createTenant(db.pools.app, 'acme');
  await createTenant(db.pools.app, 'plain');
  const gone = await createTenant(db.pools.app, 'gone');
  for (const tenant of [acme, gone])
    await db.app.withTenant(tenant, (tx) =>
      tx.query(
        `INSERT INTO branding_configs
           (tenant_id, app_name, logo_url, primary_color, secondary_color, favicon)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [tenant, ACME.app_name, ACME.logo_url, ACME.primary_color, ACME.secondary_color, ''],
      ),
    );
  await db.pools.mssp.query(
    `UPDATE tenants SET state = 'soft-deleted', deleted_at = now() WHERE id = $1`,
    [gone],
  );
});
after(async () => {
  await api.close();
  await db.drop();
});

/** A GET with a chosen Host header (fetch() may not set one). */
function get(
  base: string,
  path: string,
  host?: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { headers: host ? { host } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const byQuery = (host: string) =>
  get(api.url, `/api/auth/branding?host=${encodeURIComponent(host)}`);

test('issue 15 /api/auth/branding?host= answers exactly what /api/public/branding answers from that host', async () => {
  const expected: [string, unknown][] = [
    ['acme.customers.example.test', ACME],
    ['ACME.customers.example.test:443', ACME],
    // A tenant without branding, an unknown slug, a soft-deleted tenant and any other host
    // all read as the install branding: the answer tells no one which slugs exist.
    ['plain.customers.example.test', INSTALL_BRANDING],
    ['nosuch.customers.example.test', INSTALL_BRANDING],
    ['gone.customers.example.test', INSTALL_BRANDING],
    ['mssp.example.test', INSTALL_BRANDING],
    ['127.0.0.1:8080', INSTALL_BRANDING],
    ['[::1]:8080', INSTALL_BRANDING],
  ];
  for (const [host, body] of expected) {
    const named = await byQuery(host);
    const fromHost = await get(api.url, '/api/public/branding', host);
    assert.deepEqual([named.status, named.body], [200, body], host);
    assert.deepEqual(named.body, fromHost.body, host);
    assert.equal(named.headers['cache-control'], 'no-cache');
    assert.equal(named.headers['set-cookie'], undefined);
  }
});

test('issue 15 a bad host is 400 validation_failed naming /query/host', async () => {
  const before = await db.pools.mssp.query('SELECT count(*)::int AS n FROM audit_log');
  for (const query of [
    '',
    '?host=',
    `?host=${'a'.repeat(261)}`,
    '?host=acme%20shield.example',
    '?host=acme.customers.example.test%2Fportal',
    '?host=https%3A%2F%2Facme.customers.example.test',
    '?host=-acme.customers.example.test',
    '?host=acme..customers.example.test',
    '?host=%C3%A4cme.customers.example.test',
    '?host=acme.customers.example.test%3A',
    '?host=acme.customers.example.test&tenant=acme',
  ]) {
    const res = await get(api.url, `/api/auth/branding${query}`);
    assert.deepEqual([res.status, res.body.code], [400, 'validation_failed'], query);
    const errors = res.body.errors as { path: string }[];
    assert.ok(errors.length > 0 && errors.every((e) => e.path.startsWith('/query')), query);
  }
  const afterCount = await db.pools.mssp.query('SELECT count(*)::int AS n FROM audit_log');
  assert.deepEqual(afterCount.rows, before.rows);
});

test('§7 /api/auth/branding is 404 in proxy mode, like every /api/auth route; /api/public/branding stays', async () => {
  const proxy = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: ['127.0.0.1/32'],
    auth: { customerHostname: CUSTOMERS },
  });
  try {
    const res = await get(proxy.url, '/api/auth/branding?host=acme.customers.example.test');
    assert.deepEqual([res.status, res.body.code], [404, 'not_found']);
    const pub = await get(proxy.url, '/api/public/branding', 'acme.customers.example.test');
    assert.deepEqual([pub.status, pub.body], [200, ACME]);
  } finally {
    await proxy.close();
  }
});
