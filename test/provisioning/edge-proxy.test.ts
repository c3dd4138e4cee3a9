import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import {
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ServicePort,
} from '@kubernetes/client-node';
import { edgePorts } from '../../src/orchestrator/edge-ports.ts';
import {
  CONFIG_SHA_ANNOTATION,
  EDGE_PROXY_CONFIG_KEY,
  EDGE_PROXY_NAME,
  syncEdgeProxy,
} from '../../src/orchestrator/edge-proxy.ts';
import { configSha256, renderEdgeProxyConfig } from '../../src/orchestrator/edge-proxy-config.ts';
import { mergeValues, renderSystemChart, sampleValues } from '../policies/system-chart.ts';
import { problemCode } from '../support/api.ts';
import { waitUntil } from '../support/cluster.ts';
import {
  createTenantVia,
  type Orchestration,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

const run = promisify(execFile);

/** The system chart's edge-proxy objects, applied to the test install namespace as helm would. */
async function installEdgeProxy(o: Orchestration): Promise<void> {
  const values = mergeValues(sampleValues(o.installNamespace), { edgeProxy: { enabled: true } });
  const objects = await renderSystemChart(
    join(o.cluster.binDir, 'helm'),
    o.installNamespace,
    values,
    ['templates/edge-proxy.yaml'],
  );
  assert.deepEqual(
    objects.map((x) => x.kind),
    ['ConfigMap', 'Service', 'Deployment'],
  );
  const api = KubernetesObjectApi.makeApiClient(o.cluster.kubeConfig);
  for (const object of objects) await api.create(object);
}

const o = useOrchestration(
  { env: { SVC_EDGE_PROXY: 'on' }, timing: { decommissionGraceMs: 1_000 } },
  installEdgeProxy,
);

async function liveProxy() {
  const namespace = o.installNamespace;
  const [configMap, service, deployment] = await Promise.all([
    o.core.readNamespacedConfigMap({ name: EDGE_PROXY_NAME, namespace }),
    o.core.readNamespacedService({ name: EDGE_PROXY_NAME, namespace }),
    o.apps.readNamespacedDeployment({ name: EDGE_PROXY_NAME, namespace }),
  ]);
  return {
    configMap,
    config: configMap.data?.[EDGE_PROXY_CONFIG_KEY] ?? '',
    ports: (service.spec?.ports ?? []).map((p: V1ServicePort) => `${p.name}:${p.port}`).sort(),
    service,
    sha: deployment.spec?.template.metadata?.annotations?.[CONFIG_SHA_ANNOTATION],
  };
}

/** What svc must have written for exactly these tenants (slug → pair from the database). */
async function expected(tenants: Array<{ id: string; slug: string }>) {
  const rows = await Promise.all(
    tenants.map(async (t) => ({ ...t, pair: (await tenantRow(o, t.id))?.edge_port_pair })),
  );
  const edge = rows.map((t) => {
    assert.equal(typeof t.pair, 'number', `${t.slug} holds a pair`);
    const namespace = `tenant-${t.slug}`;
    return {
      slug: t.slug,
      namespace,
      host: `monitor.${namespace}.svc.cluster.local`,
      ports: edgePorts(o.deps.edgePortBase, t.pair as number),
    };
  });
  const config = renderEdgeProxyConfig({ tenants: edge });
  const ports = [
    'health:8404',
    ...edge.flatMap((t) => [
      `ev-${t.ports.events}:${t.ports.events}`,
      `en-${t.ports.enrollment}:${t.ports.enrollment}`,
    ]),
  ].sort();
  return { config, sha: configSha256(config), ports };
}

async function haproxyAccepts(config: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-edge-cm-'));
  try {
    const file = join(dir, 'haproxy.cfg');
    await writeFile(file, config);
    const { stdout } = await run('/usr/sbin/haproxy', ['-c', '-f', file]);
    assert.match(stdout, /Configuration file is valid/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function proxyMatches(tenants: Array<{ id: string; slug: string }>, what: string) {
  const want = await expected(tenants);
  return waitUntil(what, async () => {
    const live = await liveProxy();
    const same = live.config === want.config && live.sha === want.sha;
    return same && JSON.stringify(live.ports) === JSON.stringify(want.ports) ? live : undefined;
  });
}

test('issue 15 edge proxy: two edge-proxy tenants → ConfigMap, Service ports and rollout annotation; a tenant decommissioned → its frontends gone', {
  timeout: 600_000,
}, async () => {
  const before = await liveProxy();
  assert.equal(before.sha, configSha256(before.config), 'the chart annotates its bootstrap config');
  const tenants = [];
  for (const prefix of ['edge-a', 'edge-b']) {
    const slug = uniqueSlug(prefix);
    const id = await createTenantVia(
      o,
      tenantConfig(slug, { monitor_ingress: { mode: 'edge-proxy' } }),
    );
    tenants.push({ id, slug });
  }
  // One tenant in loadbalancer mode gets no pair and no section.
  const lbSlug = uniqueSlug('edge-lb');
  const lbId = await createTenantVia(o, tenantConfig(lbSlug));
  for (const t of [...tenants, { id: lbId }])
    await waitForStep(o, t.id, 'step:edge_ports_allocated');

  const both = await proxyMatches(tenants, 'the proxy fronting both tenants');
  for (const t of tenants) {
    assert.match(both.config, new RegExp(`^listen tenant-${t.slug}-events$`, 'm'));
    assert.match(both.config, new RegExp(`^listen tenant-${t.slug}-enrollment$`, 'm'));
  }
  assert.doesNotMatch(both.config, new RegExp(lbSlug));
  assert.notEqual(both.sha, before.sha, 'the pods were rolled');
  await haproxyAccepts(both.config);

  // Nothing changed: nothing is written, nothing restarts.
  const again = await syncEdgeProxy(o.deps);
  assert.deepEqual(
    {
      config: again?.config,
      service: again?.service,
      rollout: again?.rollout,
      tenants: again?.tenants,
    },
    { config: 'unchanged', service: 'unchanged', rollout: 'unchanged', tenants: 2 },
  );
  assert.equal(
    (await liveProxy()).configMap.metadata?.resourceVersion,
    both.configMap.metadata?.resourceVersion,
  );

  const [gone, kept] = tenants as [{ id: string; slug: string }, { id: string; slug: string }];
  // Readiness recorded: the orchestrator's task on the tenant is over. At `provisioning` alone
  // it may still hold the tenant for the readiness wait, and a decommission then answers 409
  // tenant_busy (docs/orchestrator.md "Guarded transitions"), as it did once under load.
  // A client that meets tenant_busy tries again when the work is done; so does this test.
  await waitForStep(o, gone.id, 'step:package_ready');
  const res = await waitUntil('the decommission accepted', async () => {
    const answer = await o.admin.mssp.decommission({ params: { tenant_id: gone.id } });
    if (answer.status === 409 && problemCode(answer) === 'tenant_busy') return undefined;
    return answer;
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  await waitForState(o, gone.id, 'soft-deleted', 400_000);
  const one = await proxyMatches([kept], 'the proxy without the decommissioned tenant');
  assert.doesNotMatch(one.config, new RegExp(gone.slug));
  const goneRow = await tenantRow(o, gone.id);
  assert.equal(goneRow?.edge_port_pair, null, 'its pair was released');
  assert.equal(one.ports.length, 3, 'health and the remaining tenant’s pair');
  assert.notEqual(one.sha, both.sha, 'the annotation changed: haproxy restarts without the tenant');
  await haproxyAccepts(one.config);
});

test('issue 15 edge proxy: a hand edit of the ConfigMap, the Service ports or the annotation is repaired by the reconcile pass', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('edge-r');
  const id = await createTenantVia(
    o,
    tenantConfig(slug, { monitor_ingress: { mode: 'edge-proxy' } }),
  );
  await waitForStep(o, id, 'step:edge_ports_allocated');
  // Every tenant still holding a pair (the first test's survivor too).
  const { rows } = await o.db.pools.mssp.query<{ id: string; slug: string }>(
    'SELECT id, slug FROM tenants WHERE edge_port_pair IS NOT NULL',
  );
  const good = await proxyMatches(rows, 'the proxy fronting the tenant');

  const namespace = o.installNamespace;
  const edited = good.configMap;
  edited.data = { [EDGE_PROXY_CONFIG_KEY]: 'global\n    maxconn 1\n' };
  await o.core.replaceNamespacedConfigMap({ name: EDGE_PROXY_NAME, namespace, body: edited });
  const service = good.service;
  if (service.spec)
    service.spec.ports = (service.spec.ports ?? []).filter((p) => p.name === 'health');
  await o.core.replaceNamespacedService({ name: EDGE_PROXY_NAME, namespace, body: service });
  assert.notEqual((await liveProxy()).config, good.config);

  await o.orchestrator.reconcile();
  const repaired = await liveProxy();
  assert.equal(repaired.config, good.config);
  assert.deepEqual(repaired.ports, good.ports);
  assert.equal(repaired.sha, good.sha);

  await o.apps.patchNamespacedDeployment(
    {
      name: EDGE_PROXY_NAME,
      namespace,
      body: { spec: { template: { metadata: { annotations: { [CONFIG_SHA_ANNOTATION]: 'x' } } } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  assert.equal((await liveProxy()).sha, 'x');
  await o.orchestrator.reconcile();
  assert.equal((await liveProxy()).sha, good.sha);
});
