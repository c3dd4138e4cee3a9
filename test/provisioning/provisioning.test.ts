import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { findTenant } from '../../src/domains/tenants/tenant-repository.ts';
import { RELEASE_NAME, renderFor } from '../../src/orchestrator/release.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';
import {
  createTenantVia,
  PROVISIONED_LIFECYCLE,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

const o = useOrchestration();

async function secretValues(namespace: string, name: string): Promise<Record<string, string>> {
  const secret = await o.core.readNamespacedSecret({ name, namespace });
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
}

/** Every text the database holds about a tenant, as one string (through BYPASSRLS). */
async function everythingStoredAbout(tenantId: string): Promise<string> {
  const tables = [
    'tenants',
    'tenant_secrets',
    'tenant_lifecycle_events',
    'events',
    'audit_log',
    'integration_configs',
  ];
  const parts: string[] = [];
  for (const table of tables) {
    const column = table === 'tenants' ? 'id' : 'tenant_id';
    const { rows } = await o.db.pools.mssp.query(
      `SELECT row_to_json(t)::text AS j FROM ${table} t WHERE ${column} = $1`,
      [tenantId],
    );
    parts.push(...rows.map((r) => (r as { j: string }).j));
  }
  return parts.join('\n');
}

test('§9.4 create → namespace with §2.5 labels, bootstrap Secrets, package Ready, adapter heartbeat → active', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('e2e');
  const config = tenantConfig(slug);
  const id = await createTenantVia(o, config);
  const namespace = `tenant-${slug}`;

  await waitForState(o, id, 'provisioning');
  const ns = await o.core.readNamespace({ name: namespace });
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(ns.metadata?.labels ?? {}).filter(
        ([k]) => k !== 'kubernetes.io/metadata.name',
      ),
    ),
    {
      tenant: 'true',
      'managed-by': 'svc',
      'mssp-id': o.deps.install.msspId,
      'install-id': o.deps.install.installId,
      'tenant-id': id,
    },
  );

  // §9.4 item 4: the data-plane credentials reached the tenant namespace only now.
  const install = await secretValues(o.installNamespace, `tenant-${id}-bootstrap`);
  const components = await secretValues(namespace, 'svc-bootstrap');
  for (const key of [
    'monitor-bootstrap-password',
    'cases-admin-password',
    'analysis-admin-password',
    'store-password',
    'monitor-enrollment-secret',
  ]) {
    assert.ok((components[key] ?? '').length >= 32, `${key} generated`);
    assert.equal(components[key], install[key], `${key} copied unchanged`);
  }
  const adapter = await secretValues(namespace, 'svc-adapter-bootstrap');
  assert.equal(adapter['tenant-id'], id);
  assert.equal(adapter.credential, install['adapter-bootstrap-credential']);
  const llm = await secretValues(o.installNamespace, `tenant-${id}-llm`);
  assert.equal(llm.api_key, config.llm?.api_key);

  const release = await o.deps.helm.status({ release: RELEASE_NAME, namespace });
  assert.equal(release?.status, 'deployed');
  assert.equal(release?.chartVersion, '0.1.0');

  // The heartbeat counts only once every package resource is Ready (§3.1 row 3).
  await waitForState(o, id, 'provisioning');
  const steps = await waitForStep(o, id, 'step:package_ready');
  assert.deepEqual(steps, PROVISIONED_LIFECYCLE);
  // Its Pod's adapter, run from the Pod's own Secrets and environment: the first heartbeat
  // activates the tenant (the process logs this only when svc answers `activated: true`).
  const adapterPod = await o.runAdapter(slug);
  await adapterPod.adapter.waitForLog((l) => l.msg === 'the tenant is active (first heartbeat)');
  const row = await tenantRow(o, id);
  assert.equal(row?.state, 'active');
  assert.equal(row?.chart_version, '0.1.0');
  const { rows: activation } = await o.db.pools.mssp.query<{ actor_principal: string }>(
    `SELECT actor_principal FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.activate'`,
    [id],
  );
  assert.deepEqual(activation, [{ actor_principal: 'Adapter' }]);
  // Alerts flow in: the indexer login the chart mounts for the adapter is the one the tenant's
  // indexer is configured with (the stand-in refuses any other), and svc stores what it reads.
  const alerts = wazuhAlerts(3);
  adapterPod.indexer.append(...alerts);
  for (const deadline = Date.now() + 60_000; ; await sleep(200)) {
    const { rows: stored } = await o.db.pools.mssp.query<{ source_id: string }>(
      `SELECT payload->>'source_id' AS source_id FROM events
        WHERE tenant_id = $1 AND type = 'alert.received'`,
      [id],
    );
    const ids = stored.map((r) => r.source_id).sort();
    if (ids.length === alerts.length) {
      assert.deepEqual(ids, alerts.map((a) => String(a.id)).sort());
      break;
    }
    assert.ok(Date.now() < deadline, `alerts stored: ${ids.join(', ')}`);
  }

  // Every workload the release made is Ready, every claim bound.
  const deployments = await o.apps.listNamespacedDeployment({ namespace });
  const statefulSets = await o.apps.listNamespacedStatefulSet({ namespace });
  assert.ok(deployments.items.length + statefulSets.items.length >= 6);
  for (const w of [...deployments.items, ...statefulSets.items]) {
    assert.equal(w.status?.readyReplicas ?? 0, w.spec?.replicas ?? 1, `${w.metadata?.name} ready`);
  }

  // The database holds references only: no generated secret value appears in any row.
  const stored = await everythingStoredAbout(id);
  for (const value of [...Object.values(components), adapter.credential ?? '', llm.api_key ?? '']) {
    assert.ok(value.length > 0 && !stored.includes(value), 'a secret value reached the database');
  }
  const { rows: refs } = await o.db.pools.mssp.query<{
    purpose: string;
    namespace: string;
    name: string;
  }>('SELECT purpose, namespace, name FROM tenant_secrets WHERE tenant_id = $1 ORDER BY purpose', [
    id,
  ]);
  assert.deepEqual(
    refs.map((r) => `${r.purpose}=${r.namespace}/${r.name}`),
    [
      `adapter-bootstrap=${namespace}/svc-adapter-bootstrap`,
      `adapter-indexer=${namespace}/svc-adapter-indexer`,
      `adapter-token=${namespace}/svc-adapter-token`,
      `bootstrap=${o.installNamespace}/tenant-${id}-bootstrap`,
      `component-bootstrap=${namespace}/svc-bootstrap`,
      `enrollment-ca=${o.installNamespace}/tenant-${id}-enrollment-ca`,
      `enrollment-tls=${namespace}/svc-enrollment-tls`,
      `indexer-security=${namespace}/svc-indexer-security`,
      `indexer-tls=${namespace}/svc-indexer-tls`,
      `llm=${o.installNamespace}/tenant-${id}-llm`,
    ],
  );

  // The API's lifecycle view is in order (ids are bigints: sorted as numbers, not as text).
  const view = await o.admin.mssp.getTenant({ params: { tenant_id: id } });
  assert.equal(view.status, 200);
  if (view.status === 200) {
    const ids = view.body.lifecycle.map((e) => BigInt(e.id));
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    assert.equal(view.body.lifecycle.at(-1)?.to_state, 'active');
  }

  // Progress went to the tenant's event stream (the MSSP console's live view).
  const { rows: stream } = await o.db.pools.mssp.query<{ type: string }>(
    `SELECT type FROM events WHERE tenant_id = $1 AND stream_type = 'tenant_lifecycle' ORDER BY stream_seq`,
    [id],
  );
  assert.ok(stream.length >= 9);
  assert.ok(stream.some((e) => e.type === 'tenant.lifecycle.transition'));
});

test('§9.5.2 round trip: tenant config → rendered values → installed release → values and resources read back, no drift', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('trip');
  const id = await createTenantVia(
    o,
    tenantConfig(slug, {
      integrations: { external_analyzer_url: 'https://analyzer.example.test' },
      monitor_ingress: { mode: 'edge-proxy', hostname: 'events.example.test' },
      components: {
        monitor_dashboard_enabled: false,
        cases: {
          requests: { cpu: '250m', memory: '768Mi' },
          limits: { cpu: '1', memory: '1536Mi' },
        },
        analyzers: ['VirusTotal_3_1', 'Abuse_Finder_3_0'],
      },
    }),
  );
  const namespace = `tenant-${slug}`;
  await waitForState(o, id, 'provisioning');
  const tenant = await o.db.app.withoutTenant((tx) => findTenant(tx, id));
  assert.ok(tenant);
  const { values } = await renderFor(o.deps, tenant, '0.1.0');

  // What Helm stored is exactly what svc rendered.
  assert.deepEqual(await o.deps.helm.values({ release: RELEASE_NAME, namespace }), values);
  assert.equal(values.llm.apiKeyRef.name, `tenant-${id}-llm`);
  assert.equal(values.llm.apiKeyRef.namespace, o.installNamespace);
  assert.deepEqual(values.networkPolicies.allowedLlmHosts, ['llm.example.test']);
  assert.equal(values.analysis.enabled, false);

  // And the cluster holds what the values say.
  const quota = await o.core.listNamespacedResourceQuota({ namespace });
  assert.equal(quota.items.length, 1);
  const hard = quota.items[0]?.spec?.hard ?? {};
  assert.deepEqual(
    [
      hard['requests.cpu'],
      hard['requests.memory'],
      hard['limits.cpu'],
      hard['limits.memory'],
      hard.pods,
    ],
    [
      values.resourceQuota.requests.cpu,
      values.resourceQuota.requests.memory,
      values.resourceQuota.limits.cpu,
      values.resourceQuota.limits.memory,
      String(values.resourceQuota.pods),
    ],
  );
  const deployments = await o.apps.listNamespacedDeployment({ namespace });
  const statefulSets = await o.apps.listNamespacedStatefulSet({ namespace });
  const names = [...deployments.items, ...statefulSets.items].map((w) => w.metadata?.name).sort();
  assert.deepEqual(names, [
    'cases',
    'cases-store',
    'monitor-indexer',
    'monitor-manager',
    'svc-adapter',
  ]);
  const cases = deployments.items.find((d) => d.metadata?.name === 'cases');
  assert.deepEqual(
    plain(cases?.spec?.template.spec?.containers[0]?.resources),
    values.components.cases.resources,
  );
  const indexer = statefulSets.items.find((d) => d.metadata?.name === 'monitor-indexer');
  assert.deepEqual(
    plain(indexer?.spec?.template.spec?.containers[0]?.resources),
    values.components.monitor.indexer.resources,
  );
  assert.equal(
    indexer?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage,
    values.components.monitor.indexer.persistence.size,
  );
  const services = await o.core.listNamespacedService({ namespace });
  const monitor = services.items.find((s) => s.spec?.ports?.some((p) => p.port === 1514));
  assert.equal(monitor?.spec?.type, 'ClusterIP');
  const ns = await o.core.readNamespace({ name: namespace });
  for (const [key, value] of Object.entries(values.namespaceLabels)) {
    assert.equal(ns.metadata?.labels?.[key], value, `namespace label ${key}`);
  }
  // Every namespaced object of the release lives in the tenant namespace.
  const manifest = await o.deps.helm.manifest({ release: RELEASE_NAME, namespace });
  for (const match of manifest.matchAll(/^ {2}namespace: (.+)$/gm)) {
    assert.equal(match[1]?.trim().replace(/^"|"$/g, ''), namespace);
  }
});

/** client-node returns model class instances; compare their data. */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value ?? null));
}
