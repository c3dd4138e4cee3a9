// Issue 32: the system chart's tenants.packages, the tenant packages svc pulls from a registry
// by digest (docs/charts-system.md "Tenant packages from a registry"): rendered into the
// environment of every svc Deployment, with the registry's CA from outbound.caBundle; the
// schema refuses anything not pinned by digest before Helm renders.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import { loadConfig } from '../../src/config/index.ts';
import {
  mergeValues,
  renderSystemChart,
  sampleValues,
  type Values,
} from '../policies/system-chart.ts';
import { getTestCluster } from '../support/cluster.ts';
import { loopbackCertificate } from '../support/loopback-tls.ts';

const cluster = getTestCluster();
const helm = join(cluster.binDir, 'helm');
const ns = 'svc-system';
const render = (overrides: Values = {}) =>
  renderSystemChart(helm, ns, mergeValues(sampleValues(ns), overrides));
const DEPLOYMENTS = ['svc-api', 'svc-orchestrator', 'svc-worker'];
const ref = (hex: string) =>
  `oci://registry.test:5000/acme/charts/svc-tenant@sha256:${hex.repeat(64)}`;

function envOf(objects: KubernetesObject[], name: string): Record<string, string | undefined> {
  const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata?.name === name) as
    | V1Deployment
    | undefined;
  const main = deployment?.spec?.template.spec?.containers[0];
  assert.ok(main, `Deployment ${name} has a container`);
  return Object.fromEntries((main.env ?? []).map((e) => [e.name, e.value]));
}

test('issue 32 tenants.packages: every svc Deployment reads the pinned references as SVC_TENANT_PACKAGES, the registry CA from outbound.caBundle; svc accepts what it renders', async () => {
  const { cert } = await loopbackCertificate();
  const packages = [ref('a'), ref('b')];
  const objects = await render({ tenants: { packages }, outbound: { caBundle: cert } });
  for (const name of DEPLOYMENTS) {
    const env = envOf(objects, name);
    assert.equal(env.SVC_TENANT_PACKAGES, packages.join(','), name);
    assert.equal(env.SVC_TENANT_PACKAGES_CA_FILE, env.SVC_OUTBOUND_CA_FILE, name);
    assert.equal(env.SVC_TENANT_PACKAGES_CA_FILE, '/etc/svc/outbound-ca/ca.pem', name);
    // What the chart renders is what svc's configuration reads.
    const read = loadConfig({
      SVC_TENANT_PACKAGES: env.SVC_TENANT_PACKAGES,
      SVC_TENANT_PACKAGES_CA_FILE: env.SVC_TENANT_PACKAGES_CA_FILE,
    }).orchestrator;
    assert.deepEqual(
      read.tenantPackages.map((p) => p.reference),
      packages,
    );
  }
  // Without a CA bundle the registry is trusted by the system roots: no CA file.
  const publicRegistry = await render({ tenants: { packages } });
  for (const name of DEPLOYMENTS) {
    const env = envOf(publicRegistry, name);
    assert.equal(env.SVC_TENANT_PACKAGES, packages.join(','), name);
    assert.equal('SVC_TENANT_PACKAGES_CA_FILE' in env, false, name);
  }
});

test('issue 32 tenants.packages: empty by default (the bundled tenant package); no setting rendered', async () => {
  const objects = await render();
  for (const name of DEPLOYMENTS) {
    const env = envOf(objects, name);
    assert.equal('SVC_TENANT_PACKAGES' in env, false, name);
    assert.equal('SVC_TENANT_PACKAGES_CA_FILE' in env, false, name);
  }
});

test('issue 32 tenants.packages: a tag, another chart, a repeat or a non-list is refused by the schema', async () => {
  for (const packages of [
    ['oci://registry.test/acme/charts/svc-tenant:0.1.0'],
    [`oci://registry.test/acme/charts/svc-system@sha256:${'a'.repeat(64)}`],
    [ref('a'), ref('a')],
    ref('a'),
  ]) {
    await assert.rejects(
      render({ tenants: { packages } }),
      /tenants\.packages|tenants\/packages|values don't meet the specifications/,
      JSON.stringify(packages),
    );
  }
});
