import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { INDEXER_TLS_SECRET, issueIndexerPki } from '../../src/orchestrator/indexer-pki.ts';
import { heartbeatRow, setState } from '../internal/support.ts';
import { startAdapter } from '../support/adapter-process.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type IndexerStandIn, startIndexerStandIn } from '../support/indexer-stand-in.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';
import {
  type AdapterTenant,
  adapterTenant,
  eventually,
  INDEXER_PASSWORD,
  INDEXER_USER,
  storedSourceIds,
} from './support.ts';

// The adapter verifies the tenant indexer's TLS against the CA svc issued for that tenant
// (src/orchestrator/indexer-pki.ts; the chart mounts root-ca.pem as SVC_INDEXER_CA_FILE). The
// stand-in serves the generated node certificate; the adapter reaches it under its in-cluster
// name (test/support/cluster-dns.ts resolves it to loopback), so hostname checks are real.
// The stand-in stays for the refusals: a TLS handshake refused by the client is the adapter's
// doing, and a 13 s security node per case adds nothing; the real security plugin's sign-in
// with svc's provisioned credential is proven on the real node (test/indexer-security/).

const NAMESPACE = 'tenant-tls';
const K = INDEXER_TLS_SECRET.keys;
const DNS_PRELOAD = fileURLToPath(new URL('../support/cluster-dns.ts', import.meta.url));

let db: TestDatabase;
let api: TestApi;
let indexer: IndexerStandIn;
const tenants: AdapterTenant[] = [];
let caFile: string;
let otherCaFile: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  const [pki, other] = await Promise.all([
    issueIndexerPki(NAMESPACE, new Date()),
    issueIndexerPki('tenant-other', new Date()),
  ]);
  indexer = await startIndexerStandIn({
    username: INDEXER_USER,
    password: INDEXER_PASSWORD,
    tls: { cert: pki[K.node], key: pki[K.nodeKey] },
  });
  const first = await adapterTenant(db, 'tls');
  tenants.push(first);
  caFile = path.join(first.mounts.root, 'root-ca.pem');
  otherCaFile = path.join(first.mounts.root, 'other-root-ca.pem');
  await writeFile(caFile, pki[K.ca]);
  await writeFile(otherCaFile, other[K.ca]);
});
after(async () => {
  await indexer.close();
  await api.close();
  for (const t of tenants) await t.mounts.remove();
  await db.drop();
});

/** The chart's URL for the indexer, on the stand-in's port. */
function indexerUrl(host = `monitor-indexer.${NAMESPACE}.svc`): string {
  return `https://${host}:${new URL(indexer.url).port}`;
}

function env(tenant: AdapterTenant, extra: Record<string, string>): Record<string, string> {
  return tenant.env(api.url, indexer, { NODE_OPTIONS: `--import=${DNS_PRELOAD}`, ...extra });
}

test('§1.2 with SVC_INDEXER_CA_FILE = the tenant’s indexer CA, the adapter verifies the indexer’s certificate and ingests its alerts', async () => {
  const [tenant] = tenants as [AdapterTenant];
  await setState(db, tenant.tenantId, 'provisioning');
  const alerts = wazuhAlerts(120, 0, { manager: 'tls-manager' });
  indexer.append(...alerts);
  const adapter = await startAdapter(
    env(tenant, { SVC_INDEXER_URL: indexerUrl(), SVC_INDEXER_CA_FILE: caFile }),
  );
  try {
    const ids = await eventually(
      () => storedSourceIds(db, tenant.tenantId),
      (stored) => stored.size === alerts.length,
    );
    assert.deepEqual([...ids.keys()].sort(), alerts.map((a) => a.id).sort());
    assert.ok(indexer.requests.length > 0, 'the searches reached the indexer over TLS');
    const heartbeat = await eventually(
      () => heartbeatRow(db, tenant.tenantId),
      (row) => row?.status.indexer === 'reachable',
    );
    assert.equal(heartbeat?.status.indexer, 'reachable');
  } finally {
    assert.equal(await adapter.stop('SIGTERM'), 0);
  }
});

for (const [what, extra, error] of [
  [
    'without SVC_INDEXER_CA_FILE (the system store)',
    {},
    /unable to (verify the first|get local issuer) certificate/,
  ],
  [
    'with another tenant’s indexer CA',
    { ca: 'other' },
    /unable to (verify the first|get local issuer) certificate/,
  ],
  [
    'under a name the certificate does not carry',
    { host: '127.0.0.1' },
    /does not match certificate's altnames/,
  ],
] as const) {
  test(`§1.2 ${what}, the adapter refuses the indexer with a TLS error, sends it nothing and ingests nothing`, async () => {
    const tenant = await adapterTenant(db, `tls-${tenants.length}`);
    tenants.push(tenant);
    const before = indexer.requests.length;
    const settings: Record<string, string> = {
      SVC_INDEXER_URL: indexerUrl('host' in extra ? extra.host : undefined),
    };
    if ('ca' in extra) settings.SVC_INDEXER_CA_FILE = otherCaFile;
    else if ('host' in extra) settings.SVC_INDEXER_CA_FILE = caFile;
    const adapter = await startAdapter(env(tenant, settings));
    try {
      const failed = await adapter.waitForLog((l) => l.msg === 'indexer search failed');
      assert.match(JSON.stringify(failed.err), error);
      // It keeps trying (backoff) and still has sent nothing: no credentials left the process.
      await adapter.waitForLog(
        (l) => l.msg === 'indexer search failed' && (l.attempt as number) >= 1,
      );
      assert.equal(indexer.requests.length, before, 'no request reached the indexer');
      const heartbeat = await eventually(
        () => heartbeatRow(db, tenant.tenantId),
        (row) => row?.status.indexer === 'unreachable',
      );
      assert.equal(heartbeat?.status.alerts_delivered, 0);
      assert.equal((await storedSourceIds(db, tenant.tenantId)).size, 0);
    } finally {
      assert.equal(await adapter.stop('SIGTERM'), 0);
    }
  });
}
