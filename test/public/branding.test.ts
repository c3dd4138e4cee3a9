import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { INSTALL_BRANDING } from '../../src/domains/branding/branding-service.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

// Issue 14 "Branding": GET /api/public/branding, keyed by the request's Host, before sign-in.

const CUSTOMERS = '*.customers.example.test';
const ACME = {
  app_name: 'Acme Shield',
  logo_url: 'https://cdn.acme.example/logo.svg',
  primary_color: '#aa0000',
  secondary_color: '#00aa00',
  favicon: 'data:image/png;base64,iVBORw0KGgo=',
};

let db: TestDatabase;
let api: TestApi;
let acme: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { auth: { customerHostname: CUSTOMERS } });
  acme = await createTenant(db.pools.app, 'acme');
  await createTenant(db.pools.app, 'plain');
  await db.app.withTenant(acme, (tx) =>
    tx.query(
      `INSERT INTO branding_configs
         (tenant_id, app_name, logo_url, primary_color, secondary_color, favicon)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [acme, ACME.app_name, ACME.logo_url, ACME.primary_color, ACME.secondary_color, ACME.favicon],
    ),
  );
});
after(async () => {
  await api.close();
  await db.drop();
});

/** fetch() may not set Host; a browser on a customer host sends it, so the test does too. */
function branding(host: string): Promise<{ status: number; headers: Headers; body: unknown }> {
  const url = new URL('/api/public/branding', api.url);
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === 'string') headers.set(name, value);
        }
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers, body: JSON.parse(text) });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

test("§5.9.1 a customer host gets its tenant's branding without signing in", async () => {
  for (const host of ['acme.customers.example.test', 'ACME.customers.example.test:443']) {
    const res = await branding(host);
    assert.equal(res.status, 200, host);
    assert.deepEqual(res.body, ACME, host);
  }
});

test('§5.9.1 any other host gets the install branding (the MSSP console)', async () => {
  assert.deepEqual(INSTALL_BRANDING.app_name, 'svc');
  for (const host of ['mssp.example.test', '127.0.0.1', 'customers.example.test']) {
    const res = await branding(host);
    assert.deepEqual([res.status, res.body], [200, INSTALL_BRANDING], host);
  }
});

test('issue 14 an unknown slug and a tenant without branding both get the install branding', async () => {
  for (const host of ['nobody.customers.example.test', 'plain.customers.example.test']) {
    assert.deepEqual((await branding(host)).body, INSTALL_BRANDING, host);
  }
});

test('issue 14 the answer has only the branding keys: no id, state or default flag', async () => {
  const res = await branding('acme.customers.example.test');
  assert.deepEqual(Object.keys(res.body as object).sort(), [
    'app_name',
    'favicon',
    'logo_url',
    'primary_color',
    'secondary_color',
  ]);
  assert.doesNotMatch(JSON.stringify(res.body), new RegExp(acme));
  // One copy per host in any shared cache; a branding change shows on the next load.
  assert.equal(res.headers.get('vary'), 'Host');
  assert.equal(res.headers.get('cache-control'), 'no-cache');
});

test("issue 14 a soft-deleted tenant's host gets the install branding", async () => {
  await db.pools.mssp.query(
    `UPDATE tenants SET state = 'soft-deleted', deleted_at = now() WHERE id = $1`,
    [acme],
  );
  try {
    assert.deepEqual((await branding('acme.customers.example.test')).body, INSTALL_BRANDING);
  } finally {
    await db.pools.mssp.query(
      `UPDATE tenants SET state = 'pending', deleted_at = NULL WHERE id = $1`,
      [acme],
    );
  }
  assert.deepEqual((await branding('acme.customers.example.test')).body, ACME);
});
