import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { createNamespaceStore } from '../../src/cluster/namespaces.ts';
import { integrationSecretKey } from '../../src/domains/tenants/config-secrets.ts';
import { IntegrationError } from '../../src/integrations/integration-error.ts';
import {
  ANALYSIS_SERVICE,
  CASES_SERVICE,
  COMPONENT_SECRET,
  planEndpoints,
  resolveEndpoints,
} from '../../src/integrations/tenant-endpoints.ts';
import { createTheHiveClient } from '../../src/integrations/thehive/thehive-client.ts';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';
import { getTestCluster } from '../support/cluster.ts';
import { startTheHiveStandIn } from '../support/thehive-stand-in.ts';

// Issue 13: the pipeline finds the tenant's case and analysis components from the tenant's
// stored integrations: a configured endpoint wins, otherwise the tenant package's own Services
// in tenant-<slug> with the package's admin credentials. docs/integrations.md.

const run = promisify(execFile);
const tenant = { id: '3f1c2a9e-7b4d-4e21-9a0c-5d8e6f7a1b2c', slug: 'acme' };
const INSTALL = 'svc-system';

test('issue 13 without integrations both components are the tenant package Services, with basic auth from svc-bootstrap', () => {
  const plan = planEndpoints(tenant, undefined, INSTALL);
  assert.deepEqual(plan, {
    cases: {
      baseUrl: 'http://cases.tenant-acme.svc:9000',
      source: 'in-cluster',
      credential: {
        auth: 'basic',
        user: 'admin@thehive.local',
        secret: { namespace: 'tenant-acme', name: 'svc-bootstrap', key: 'cases-admin-password' },
      },
    },
    analysis: {
      baseUrl: 'http://analysis.tenant-acme.svc:9001',
      source: 'in-cluster',
      credential: {
        auth: 'basic',
        user: 'admin',
        secret: { namespace: 'tenant-acme', name: 'svc-bootstrap', key: 'analysis-admin-password' },
      },
    },
  });
  // Items of other kinds, or without a URL, change nothing.
  const same = planEndpoints(
    tenant,
    {
      items: [
        { kind: 'thehive', name: 'no url' },
        { kind: 'misp', name: 'm', endpoint_url: 'https://misp.example' },
      ],
    },
    INSTALL,
  );
  assert.deepEqual(same, plan);
});

test('issue 13 a thehive or cortex integration with endpoint_url wins, its credential a bearer key from tenant-<id>-integrations', () => {
  const plan = planEndpoints(
    tenant,
    {
      external_analyzer_url: 'https://ignored.example',
      items: [
        { kind: 'cortex', name: 'Shared Cortex', endpoint_url: 'https://cortex.example:9001' },
        { kind: 'thehive', name: 'SOC', endpoint_url: 'https://thehive.example' },
        { kind: 'thehive', name: 'second', endpoint_url: 'https://later.example' },
      ],
    },
    INSTALL,
  );
  const secret = (kind: string, name: string) => ({
    namespace: INSTALL,
    name: `tenant-${tenant.id}-integrations`,
    key: integrationSecretKey(kind, name),
  });
  assert.deepEqual(plan.cases, {
    baseUrl: 'https://thehive.example',
    source: 'integration',
    credential: { auth: 'bearer', secret: secret('thehive', 'SOC') },
  });
  assert.deepEqual(plan.analysis, {
    baseUrl: 'https://cortex.example:9001',
    source: 'integration',
    credential: { auth: 'bearer', secret: secret('cortex', 'Shared Cortex') },
  });
  assert.equal(secret('cortex', 'Shared Cortex').key, 'cortex.Shared_Cortex');
});

test('issue 13 external_analyzer_url replaces the in-namespace analysis; its key comes from a cortex item, or analysis is unavailable', () => {
  const keyed = planEndpoints(
    tenant,
    { external_analyzer_url: 'https://analyzer.example', items: [{ kind: 'cortex', name: 'key' }] },
    INSTALL,
  );
  assert.deepEqual(keyed.analysis, {
    baseUrl: 'https://analyzer.example',
    source: 'external-analyzer',
    credential: {
      auth: 'bearer',
      secret: { namespace: INSTALL, name: `tenant-${tenant.id}-integrations`, key: 'cortex.key' },
    },
  });
  const bare = planEndpoints(
    tenant,
    { external_analyzer_url: 'https://analyzer.example' },
    INSTALL,
  );
  assert.ok('unavailable' in bare.analysis);
  assert.match(bare.analysis.unavailable, /external_analyzer_url/);
  // An empty URL is the schema's way of saying "none".
  assert.deepEqual(
    planEndpoints(tenant, { external_analyzer_url: '' }, INSTALL).analysis,
    planEndpoints(tenant, {}, INSTALL).analysis,
  );
});

test('issue 13 the in-cluster names, ports and secret keys are the ones the tenant chart renders', async () => {
  const scratch = await mkdtemp(join(tmpdir(), 'svc-endpoints-'));
  after(() => rm(scratch, { recursive: true, force: true }));
  const values = join(scratch, 'values.json');
  await writeFile(values, JSON.stringify(sampleTenantValues()));
  const helm = join(getTestCluster().binDir, 'helm');
  const chart = join(import.meta.dirname, '..', '..', 'charts', 'svc-tenant');
  const { stdout } = await run(
    helm,
    ['template', 'svc-tenant', chart, '-n', 'tenant-acme', '-f', values],
    {
      maxBuffer: 32 * 1024 * 1024,
    },
  );
  // biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked loosely
  const objects: any[] = parseAllDocuments(stdout)
    .map((d) => d.toJS())
    .filter(Boolean);
  const plan = planEndpoints({ ...tenant, slug: 'acme' }, undefined, INSTALL);
  for (const [service, component] of [
    [CASES_SERVICE, plan.cases],
    [ANALYSIS_SERVICE, plan.analysis],
  ] as const) {
    const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === service.name);
    assert.ok(svc, `Service ${service.name}`);
    assert.deepEqual(
      svc.spec.ports.map((p: { port: number }) => p.port),
      [service.port],
    );
    assert.ok(!('unavailable' in component));
    // The server Deployment of that component takes its secret from the same key.
    const deployment = objects.find(
      (o) => o.kind === 'Deployment' && o.metadata.name === service.name,
    );
    const refs = deployment.spec.template.spec.containers[0].env
      .map(
        (e: { valueFrom?: { secretKeyRef?: { name: string; key: string } } }) =>
          e.valueFrom?.secretKeyRef,
      )
      .filter(Boolean);
    assert.ok(
      refs.some(
        (r: { name: string; key: string }) =>
          r.name === COMPONENT_SECRET && r.key === component.credential.secret.key,
      ),
      `${service.name} reads ${component.credential.secret.key}`,
    );
  }
});

test('issue 13 resolveEndpoints reads the credentials from the cluster Secrets and the client reaches the configured TheHive', {
  timeout: 120_000,
}, async () => {
  const cluster = getTestCluster();
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  const suffix = randomBytes(3).toString('hex');
  const install = `svc-ep-${suffix}`;
  const slug = `ep-${suffix}`;
  const namespaces = [install, `tenant-${slug}`];
  after(async () => {
    for (const name of namespaces) await core.deleteNamespace({ name }).catch(() => undefined);
  });
  for (const name of namespaces) await core.createNamespace({ body: { metadata: { name } } });
  const t = { id: tenant.id, slug };
  const hive = await startTheHiveStandIn({ apiKey: 'key-from-the-secret' });
  after(() => hive.close());
  await core.createNamespacedSecret({
    namespace: install,
    body: {
      metadata: { name: `tenant-${t.id}-integrations` },
      stringData: { 'thehive.SOC': 'key-from-the-secret' },
    },
  });
  await core.createNamespacedSecret({
    namespace: `tenant-${slug}`,
    body: {
      metadata: { name: 'svc-bootstrap' },
      stringData: { 'cases-admin-password': 'cases-pw', 'analysis-admin-password': 'analysis-pw' },
    },
  });
  const deps = {
    installNamespace: install,
    readSecret: createNamespaceStore(cluster.kubeConfig).readSecret,
  };

  const inCluster = await resolveEndpoints(t, undefined, deps);
  assert.deepEqual(inCluster, {
    cases: {
      baseUrl: `http://cases.tenant-${slug}.svc:9000`,
      source: 'in-cluster',
      auth: { kind: 'basic', user: 'admin@thehive.local', password: 'cases-pw' },
    },
    analysis: {
      baseUrl: `http://analysis.tenant-${slug}.svc:9001`,
      source: 'in-cluster',
      auth: { kind: 'basic', user: 'admin', password: 'analysis-pw' },
    },
  });

  const configured = await resolveEndpoints(
    t,
    { items: [{ kind: 'thehive', name: 'SOC', endpoint_url: hive.url }] },
    deps,
  );
  assert.deepEqual(configured.cases, {
    baseUrl: hive.url,
    source: 'integration',
    auth: { kind: 'bearer', apiKey: 'key-from-the-secret' },
  });
  const thehive = createTheHiveClient({ ...configured.cases, fetch: (u, init) => fetch(u, init) });
  await thehive.createCase({
    title: 't',
    description: 'd',
    severity: 2,
    tags: [],
    externalRef: 'inv-endpoints',
  });
  assert.equal(hive.cases().length, 1);

  // A configured integration whose credential is not in the Secret: kind auth, nothing sent.
  const error = await resolveEndpoints(
    t,
    { items: [{ kind: 'cortex', name: 'no key', endpoint_url: 'https://cortex.example' }] },
    deps,
  ).then(
    () => assert.fail('expected an IntegrationError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof IntegrationError);
  assert.equal(error.kind, 'auth');
  assert.match(error.message, /cortex\.no_key missing from svc-ep-/);
});
