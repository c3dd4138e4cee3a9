import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import bcrypt from 'bcryptjs';
import { parse } from 'yaml';
import {
  ensureIndexerSecrets,
  putBootstrapSecrets,
} from '../../src/orchestrator/bootstrap-secrets.ts';
import {
  dnsNamesOf,
  INDEXER_TLS_SECRET,
  indexerDnsNames,
  indexerPkiProblem,
} from '../../src/orchestrator/indexer-pki.ts';
import {
  ADAPTER_INDEXER_SECRET,
  INDEXER_SECURITY_SECRET,
} from '../../src/orchestrator/indexer-security.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';
import { activeTenant, useOrchestration } from './support.ts';

// Provisioning writes the tenant indexer's PKI (svc-indexer-tls), the adapter's read-only
// indexer login (svc-adapter-indexer) and the indexer's security configuration
// (svc-indexer-security) into the tenant namespace of the test cluster, records each by
// reference, keeps them on a repeated pass, and the adapter Pod the chart makes reads the
// indexer with that login. docs/charts-tenant.md "Indexer TLS".

const o = useOrchestration();

async function secret(namespace: string, name: string) {
  const s = await o.core.readNamespacedSecret({ name, namespace });
  const data = Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
  return { data, resourceVersion: s.metadata?.resourceVersion, labels: s.metadata?.labels };
}

test('§9.4 provisioning issues the indexer PKI and the adapter’s read-only indexer login, by reference, kept on a repeated pass; the adapter Pod ingests with that login', {
  timeout: 400_000,
}, async () => {
  const { id, slug, adapter } = await activeTenant(o, 'itls');
  const namespace = `tenant-${slug}`;

  const tls = await secret(namespace, INDEXER_TLS_SECRET.name);
  assert.deepEqual(Object.keys(tls.data).sort(), Object.values(INDEXER_TLS_SECRET.keys).sort());
  assert.equal(indexerPkiProblem(tls.data, namespace, new Date()), undefined);
  const node = new X509Certificate(tls.data[INDEXER_TLS_SECRET.keys.node] ?? '');
  assert.ok(node.verify(new X509Certificate(tls.data[INDEXER_TLS_SECRET.keys.ca] ?? '').publicKey));
  assert.deepEqual(dnsNamesOf(node), indexerDnsNames(namespace));
  assert.equal(tls.labels?.['tenant-id'], id);
  assert.equal(tls.labels?.['managed-by'], 'svc');

  const login = await secret(namespace, ADAPTER_INDEXER_SECRET.name);
  assert.equal(login.data.username, 'svc-adapter');
  const security = await secret(namespace, INDEXER_SECURITY_SECRET.name);
  const users = parse(security.data['internal_users.yml'] ?? '');
  assert.ok(await bcrypt.compare(login.data.password ?? '', users['svc-adapter'].hash));
  const components = await secret(namespace, 'svc-bootstrap');
  assert.ok(
    await bcrypt.compare(components.data['monitor-bootstrap-password'] ?? '', users.admin.hash),
    'the admin user keeps svc-bootstrap’s password, which the manager and dashboard use',
  );

  // References only: the three purposes, and no certificate, key or password in the database.
  const { rows: refs } = await o.db.pools.mssp.query<{ purpose: string; ref: string }>(
    `SELECT purpose, namespace || '/' || name AS ref FROM tenant_secrets
      WHERE tenant_id = $1 AND purpose IN ('indexer-tls', 'adapter-indexer', 'indexer-security')
      ORDER BY purpose`,
    [id],
  );
  assert.deepEqual(refs, [
    { purpose: 'adapter-indexer', ref: `${namespace}/svc-adapter-indexer` },
    { purpose: 'indexer-security', ref: `${namespace}/svc-indexer-security` },
    { purpose: 'indexer-tls', ref: `${namespace}/svc-indexer-tls` },
  ]);
  const { rows: dump } = await o.db.pools.mssp.query<{ j: string }>(
    `SELECT string_agg(row_to_json(t)::text, E'\\n') AS j FROM (
       SELECT * FROM tenant_secrets WHERE tenant_id = $1) t`,
    [id],
  );
  const stored = dump[0]?.j ?? '';
  const keyBody = (tls.data[INDEXER_TLS_SECRET.keys.nodeKey] ?? '').split('\n')[1] ?? '';
  for (const value of [keyBody, login.data.password ?? '', users['svc-adapter'].hash]) {
    assert.ok(value.length > 20 && !stored.includes(value), 'secret material reached the database');
  }

  // A repeated pass (an orchestrator resumed after a crash, the reconciler's refill) keeps them.
  await putBootstrapSecrets(o.deps, { id }, namespace);
  assert.equal(
    (await secret(namespace, INDEXER_TLS_SECRET.name)).resourceVersion,
    tls.resourceVersion,
  );
  assert.equal(
    (await secret(namespace, ADAPTER_INDEXER_SECRET.name)).resourceVersion,
    login.resourceVersion,
  );
  assert.equal(
    (await secret(namespace, INDEXER_SECURITY_SECRET.name)).resourceVersion,
    security.resourceVersion,
  );

  // The adapter Pod presents the login the chart mounts; the stand-in accepts it only because
  // the indexer's security configuration does (test/provisioning/adapter-pod.ts).
  assert.equal(adapter.env.SVC_INDEXER_CA_FILE?.endsWith('/root-ca.pem'), true);
  const alerts = wazuhAlerts(3);
  adapter.indexer.append(...alerts);
  for (const deadline = Date.now() + 60_000; ; await sleep(200)) {
    const { rows } = await o.db.pools.mssp.query<{ n: string }>(
      `SELECT count(*) AS n FROM events WHERE tenant_id = $1 AND type = 'alert.received'`,
      [id],
    );
    if (Number(rows[0]?.n) === alerts.length) break;
    assert.ok(Date.now() < deadline, `alerts stored: ${rows[0]?.n}`);
  }
  assert.ok(
    adapter.indexer.requests.every(
      (r) =>
        r.authorization ===
        `Basic ${Buffer.from(`svc-adapter:${login.data.password}`).toString('base64')}`,
    ),
    'every search as svc-adapter',
  );

  // Before an upgrade (src/orchestrator/upgrade.ts): a namespace from before these Secrets gets
  // them, and 29 days before the node certificate expires the whole set is issued anew.
  await o.core.deleteNamespacedSecret({ name: INDEXER_TLS_SECRET.name, namespace });
  assert.equal((await ensureIndexerSecrets(o.deps, { id }, namespace)).pki, 'issued');
  const restored = await secret(namespace, INDEXER_TLS_SECRET.name);
  assert.equal(indexerPkiProblem(restored.data, namespace, new Date()), undefined);
  const late = new Date(
    Date.parse(new X509Certificate(restored.data[INDEXER_TLS_SECRET.keys.node] ?? '').validTo) -
      29 * 24 * 3_600_000,
  );
  const renewed = await ensureIndexerSecrets({ ...o.deps, now: () => late }, { id }, namespace);
  assert.equal(renewed.pki, 'issued');
  const fresh = await secret(namespace, INDEXER_TLS_SECRET.name);
  assert.notEqual(
    fresh.data[INDEXER_TLS_SECRET.keys.ca],
    restored.data[INDEXER_TLS_SECRET.keys.ca],
  );
  assert.equal(indexerPkiProblem(fresh.data, namespace, late), undefined);
  assert.equal(
    (await secret(namespace, ADAPTER_INDEXER_SECRET.name)).data.password,
    login.data.password,
    'the adapter’s password is never rotated by a re-issue',
  );
});
