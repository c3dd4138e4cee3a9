// In this process too, the in-cluster names resolve to loopback: the test's own requests verify
// the node's certificate under `monitor-indexer`, as the sidecar and the adapter do.
import '../support/cluster-dns.ts';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { issueBootstrapCredential } from '../../src/domains/adapter/adapter-service.ts';
import {
  ensureIndexerPki,
  INDEXER_ADMIN_DN,
  INDEXER_NODE_DN,
  INDEXER_TLS_SECRET,
  issueIndexerPki,
  type SecretAccess,
} from '../../src/orchestrator/indexer-pki.ts';
import {
  ADAPTER_INDEXER_SECRET,
  ensureIndexerUsers,
  INDEXER_SECURITY_SECRET,
} from '../../src/orchestrator/indexer-security.ts';
import {
  createAlertIndex,
  indexAlerts,
  installAlertIndexSetup,
  installWazuhTemplate,
  type OpenSearchTarget,
} from '../../testcluster/opensearch/alert-index.ts';
import { eventually, storedSourceIds } from '../adapter/support.ts';
import { setState } from '../internal/support.ts';
import {
  type AdapterProcess,
  adapterEnv,
  createSecretMounts,
  type SecretMounts,
  startAdapter,
  writeSecretVolume,
} from '../support/adapter-process.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import {
  type OpenSearchNode,
  type SecurityFiles,
  type SecurityOptions,
  securityPem,
  startOpenSearch,
} from '../support/opensearch.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';

// The adapter against the REAL OpenSearch security plugin, configured as a tenant indexer
// (docs/charts-tenant.md "Indexer TLS and users"): svc's orchestrator code issues the PKI and
// renders the users into Secrets (here over a map: the kube-apiserver side is
// test/orchestrator/indexer-tls-renewal.test.ts), the node serves them, and the real
// `svc adapter` process signs in with the provisioned `svc-adapter` credential over TLS,
// verifying the node against the tenant CA under its in-cluster name. Then the certificates are
// re-issued (near expiry, and after a CA change); the node restarts with the new files and the
// adapter pod rolls, as svc makes them; the adapter still signs in and ingests.

const NAMESPACE = 'tenant-signin';
const K = INDEXER_TLS_SECRET.keys;
const DAY = 24 * 3_600_000;
const DNS_PRELOAD = fileURLToPath(new URL('../support/cluster-dns.ts', import.meta.url));
const INDEX = 'wazuh-alerts-4.x-2026.11.28';
const labels = { 'managed-by': 'svc' };

/** The namespace's Secrets as the orchestrator writes them (Kubernetes' API over a map). */
const secrets = new Map<string, Record<string, string>>();
const store: SecretAccess = {
  async readSecret(namespace, name) {
    return secrets.get(`${namespace}/${name}`);
  },
  async putSecret(namespace, name, data) {
    const existed = secrets.has(`${namespace}/${name}`);
    secrets.set(`${namespace}/${name}`, { ...data });
    return existed ? 'replaced' : 'created';
  },
};
const secret = (name: string) => secrets.get(`${NAMESPACE}/${name}`) ?? {};

let db: TestDatabase;
let api: TestApi;
let node: OpenSearchNode;
let tenantId: string;
let mounts: SecretMounts;
let scratch: string;
let adapter: AdapterProcess | undefined;
let written: string[] = [];

/** What the indexer pod mounts from svc's two Secrets, as the launcher takes it. */
function nodeSecurity(): SecurityOptions {
  return {
    pem: securityPem(secret(INDEXER_TLS_SECRET.name) as never),
    files: secret(INDEXER_SECURITY_SECRET.name) as unknown as SecurityFiles,
    nodeDn: INDEXER_NODE_DN,
    adminDn: INDEXER_ADMIN_DN,
  };
}

/** The admin certificate over HTTPS under the node's in-cluster name. */
function admin(): OpenSearchTarget {
  const tls = secret(INDEXER_TLS_SECRET.name);
  return {
    url: `https://monitor-indexer:${node.httpPort}`,
    ca: tls[K.ca] ?? '',
    cert: tls[K.admin] ?? '',
    key: tls[K.adminKey] ?? '',
  };
}

/** The kubelet's view of the adapter pod's volumes: svc-indexer-tls's CA and the login. */
async function mountAdapterSecrets(): Promise<void> {
  const login = secret(ADAPTER_INDEXER_SECRET.name);
  await writeSecretVolume(path.join(scratch, 'indexer-ca'), {
    [K.ca]: secret(INDEXER_TLS_SECRET.name)[K.ca] ?? '',
  });
  await writeSecretVolume(path.join(scratch, 'indexer-login'), {
    username: login.username ?? '',
    password: login.password ?? '',
  });
}

/** A new adapter pod: the real process, reading the mounted files at start. */
async function rollAdapter(): Promise<void> {
  if (adapter) assert.equal(await adapter.stop('SIGTERM'), 0);
  adapter = await startAdapter(
    adapterEnv({
      apiUrl: api.url,
      tenantId,
      indexerUrl: `https://monitor-indexer.${NAMESPACE}.svc:${node.httpPort}`,
      mounts,
      extra: {
        SVC_INDEXER_CA_FILE: path.join(scratch, 'indexer-ca', K.ca),
        SVC_INDEXER_USERNAME_FILE: path.join(scratch, 'indexer-login', 'username'),
        SVC_INDEXER_PASSWORD_FILE: path.join(scratch, 'indexer-login', 'password'),
        NODE_OPTIONS: `--import=${DNS_PRELOAD}`,
      },
    }),
  );
}

/** Writes `count` more alerts as Filebeat does and waits until svc stored every one. */
async function ingestMore(count: number): Promise<void> {
  const alerts = wazuhAlerts(count, written.length, { manager: 'signin' });
  await indexAlerts(admin(), INDEX, alerts, { refresh: 'wait_for' });
  written = [...written, ...alerts.map((a) => a.id)];
  const stored = await eventually(
    () => storedSourceIds(db, tenantId),
    (ids) => ids.size === written.length,
    90_000,
  );
  assert.deepEqual([...stored.keys()].sort(), [...written].sort());
  assert.ok(
    [...stored.values()].every((n) => n === 1),
    'each alert stored once',
  );
}

before(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'svc-indexer-signin-'));
  db = await createTestDatabase();
  api = await startTestApi(db);
  tenantId = await createTenant(db.pools.app, 'signin');
  const { secret: credential } = await db.app.withTenant(tenantId, (tx) =>
    issueBootstrapCredential(tx, tenantId),
  );
  mounts = await createSecretMounts();
  await mounts.writeBootstrap({ 'tenant-id': tenantId, credential });
  await setState(db, tenantId, 'provisioning');
  // Provisioning's indexer pass (bootstrap-secrets.ts ensureIndexerSecrets), svc's own code,
  // as it ran two years ago less 20 days: the node certificate has 20 days left (the plugin
  // refuses a certificate that is not yet valid, so the clock is not moved the other way).
  const provisioned = new Date();
  provisioned.setUTCFullYear(provisioned.getUTCFullYear() - 2);
  const issued = await ensureIndexerPki(
    store,
    NAMESPACE,
    labels,
    new Date(provisioned.getTime() + 20 * DAY),
  );
  assert.equal(issued.action, 'issued');
  await ensureIndexerUsers(store, NAMESPACE, 'monitor-bootstrap-password-1', labels);
  node = await startOpenSearch({ security: nodeSecurity() });
  await installWazuhTemplate(admin());
  await installAlertIndexSetup(admin());
  await createAlertIndex(admin(), INDEX, { shards: 3 });
  await mountAdapterSecrets();
});
after(async () => {
  await adapter?.stop('SIGTERM');
  await node?.stop();
  await api?.close();
  await mounts?.remove();
  await db?.drop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test('the adapter signs in to the real security plugin with svc’s provisioned svc-adapter credential over TLS and ingests', {
  timeout: 300_000,
}, async () => {
  await rollAdapter();
  await ingestMore(40);
});

test('after a re-issue within 30 days of expiry, the node restarted with the new files and the adapter pod rolled, the adapter still signs in', {
  timeout: 300_000,
}, async () => {
  const before = secret(INDEXER_TLS_SECRET.name);
  const left = Date.parse(new X509Certificate(before[K.node] ?? '').validTo) - Date.now();
  assert.ok(left > 19 * DAY && left < 21 * DAY, 'the node certificate is 20 days from expiry');
  const renewed = await ensureIndexerPki(store, NAMESPACE, labels, new Date());
  assert.match(renewed.action === 'issued' ? renewed.reason : 'kept', /node certificate expires/);
  assert.notEqual(secret(INDEXER_TLS_SECRET.name)[K.ca], before[K.ca], 'a new CA too');
  await mountAdapterSecrets();
  await node.restart({ security: nodeSecurity() });

  // The running adapter read the old CA at start and cannot verify the restarted node: this is
  // why its pod rolls with the indexer's (indexer-tls-roll.ts).
  const running = adapter as AdapterProcess;
  const since = running.logs().length;
  const failed = await running.waitForLog(
    (l) => l.msg === 'indexer search failed' && running.logs().indexOf(l) >= since,
    60_000,
  );
  assert.match(JSON.stringify(failed.err), /certificate/);

  await rollAdapter();
  await ingestMore(30);
});

test('after a CA change (root-ca.pem replaced, the set no longer chains to it) the next pass issues a whole new set; restarted and rolled, the adapter still signs in', {
  timeout: 300_000,
}, async () => {
  const foreign = await issueIndexerPki(NAMESPACE, new Date());
  const tls = secret(INDEXER_TLS_SECRET.name);
  await store.putSecret(
    NAMESPACE,
    INDEXER_TLS_SECRET.name,
    { ...tls, [K.ca]: foreign[K.ca] },
    labels,
  );
  const pass = await ensureIndexerPki(store, NAMESPACE, labels, new Date());
  assert.deepEqual(pass.action === 'issued' ? pass.reason : pass.action, 'not issued by its CA');
  const reissued = secret(INDEXER_TLS_SECRET.name);
  assert.notEqual(reissued[K.ca], foreign[K.ca]);
  assert.notEqual(reissued[K.ca], tls[K.ca]);
  // The users were not touched: the security index keeps the adapter's password.
  await mountAdapterSecrets();
  await node.restart({ security: nodeSecurity() });
  await rollAdapter();
  await ingestMore(30);
});
