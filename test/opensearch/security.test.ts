import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { issueIndexerPki } from '../../src/orchestrator/indexer-pki.ts';
import {
  ADAPTER_INDEXER_ROLE,
  ADAPTER_INDEXER_SECRET,
  renderSecurityConfig,
} from '../../src/orchestrator/indexer-security.ts';
import {
  expectOk,
  openSearchRequest,
  runSecurityAdmin,
  securityPem,
  startTenantIndexer,
  type TenantIndexer,
} from '../support/opensearch.ts';

// A tenant indexer on the real security plugin (docs/charts-tenant.md "Indexer TLS and users"):
// svc's PKI, svc's rendered users and roles, the chart's opensearch.yml settings. What svc
// provisions must work with the plugin itself, not only with the stand-in's reading of it.

let tenant: TenantIndexer;
const ALERTS = 'wazuh-alerts-4.x-2026.11.27';
const OTHER = 'svc-other-index';

before(async () => {
  tenant = await startTenantIndexer({ namespace: 'tenant-security' });
  const { node } = tenant;
  // The manager writes alerts as the indexer's admin; here the admin certificate does.
  await expectOk(node, `/${ALERTS}/_doc/alert-1?refresh=true`, {
    method: 'PUT',
    admin: true,
    body: { id: 'alert-1', timestamp: '2026-11-27T10:00:00Z', rule: { level: 3 } },
  });
  await expectOk(node, `/${OTHER}/_doc/secret?refresh=true`, {
    method: 'PUT',
    admin: true,
    body: { secret: true },
  });
});

after(async () => {
  await tenant?.node.stop();
});

test('the security node serves HTTPS only, with the node certificate svc issued', async () => {
  const { node } = tenant;
  assert.match(node.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  await assert.rejects(
    openSearchRequest({ ...node, url: node.url.replace('https:', 'http:') }, '/', {
      timeoutMs: 5_000,
    }),
  );
  // Another tenant's CA does not vouch for this node: the client refuses the handshake.
  const other = await issueIndexerPki('tenant-other', new Date());
  await assert.rejects(
    openSearchRequest(
      {
        url: node.url,
        security: undefined,
        tls: { ca: securityPem(other).rootCa, servername: 'monitor-indexer' },
      },
      '/',
    ),
    /certificate/,
  );
});

test('a request without credentials is refused with 401 and a basic-auth challenge', async () => {
  const res = await openSearchRequest(tenant.node, `/${ALERTS}/_search`);
  assert.equal(res.status, 401);
  assert.match(String(res.headers['www-authenticate']), /^Basic realm=/);
  const wrong = await openSearchRequest(tenant.node, `/${ALERTS}/_search`, {
    basic: { username: ADAPTER_INDEXER_SECRET.username, password: 'not-the-password' },
  });
  assert.equal(wrong.status, 401);
});

test(`svc-adapter (${ADAPTER_INDEXER_ROLE}) searches wazuh-alerts-* over TLS with svc's CA`, async () => {
  const res = await expectOk(tenant.node, '/wazuh-alerts-*/_search', {
    basic: tenant.adapter,
    body: { size: 10, sort: [{ timestamp: 'asc' }], query: { match_all: {} } },
  });
  const hits = (res.body as { hits: { hits: { _id: string }[] } }).hits.hits;
  assert.deepEqual(
    hits.map((h) => h._id),
    ['alert-1'],
  );
});

test('svc-adapter can neither read another index nor write anywhere (403)', async () => {
  const { node, adapter } = tenant;
  const read = await openSearchRequest(node, `/${OTHER}/_search`, { basic: adapter, body: {} });
  assert.equal(read.status, 403, read.text);
  const get = await openSearchRequest(node, `/${OTHER}/_doc/secret`, { basic: adapter });
  assert.equal(get.status, 403, get.text);
  const write = await openSearchRequest(node, `/${ALERTS}/_doc/forged`, {
    method: 'PUT',
    basic: adapter,
    body: { id: 'forged', timestamp: '2026-11-27T11:00:00Z' },
  });
  assert.equal(write.status, 403, write.text);
  const remove = await openSearchRequest(node, `/${ALERTS}`, { method: 'DELETE', basic: adapter });
  assert.equal(remove.status, 403, remove.text);
  const settings = await openSearchRequest(node, '/_cluster/settings', { basic: adapter });
  assert.equal(settings.status, 403, settings.text);
});

test('the admin certificate applies a changed internal_users.yml with securityadmin; the new password works, the old one no longer', async () => {
  const { node, passwords, adapter } = tenant;
  const rotated = randomBytes(18).toString('base64url');
  const files = await renderSecurityConfig({ admin: passwords.admin, adapter: rotated });
  const result = await runSecurityAdmin(node, {
    files: { 'internal_users.yml': files['internal_users.yml'] as string },
  });
  assert.match(result.output, /Done with success/);
  const fresh = { username: adapter.username, password: rotated };
  const ok = await expectOk(node, '/wazuh-alerts-*/_search', { basic: fresh, body: {} });
  assert.equal((ok.body as { hits: { hits: unknown[] } }).hits.hits.length, 1);
  const old = await openSearchRequest(node, '/wazuh-alerts-*/_search', {
    basic: adapter,
    body: {},
  });
  assert.equal(old.status, 401);
  // A certificate of the same CA that is not the admin's (the node's own) may not apply it.
  const pem = node.security?.pem;
  assert.ok(pem);
  await assert.rejects(
    runSecurityAdmin(node, {
      pem: { rootCa: pem.rootCa, adminCert: pem.nodeCert, adminKey: pem.nodeKey },
      timeoutMs: 60_000,
    }),
    /is not an admin user/,
  );
  const still = await expectOk(node, '/wazuh-alerts-*/_search', { basic: fresh, body: {} });
  assert.equal(still.status, 200);
});
