import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { parse } from 'yaml';
import { RenderError } from '../../src/domains/tenants/tenant-types.ts';
import { INDEXER_TLS_SECRET } from '../../src/orchestrator/indexer-pki.ts';
import { INDEXER_SECURITY_SECRET } from '../../src/orchestrator/indexer-security.ts';
import { INDEXER_TLS_REVISION } from '../../src/orchestrator/indexer-tls-roll.ts';
import { INDEXER_SIDECAR_RESOURCES, renderTenantValues } from '../../src/orchestrator/render.ts';
import { type Manifest, renderTenantChart } from '../indexer-security/rendered-setup.ts';

// The monitor subchart's security-config sidecar (docs/charts-tenant.md "Indexer TLS and users"):
// it runs the chart's own script with the indexer image's securityadmin.sh, sees svc's security
// files as a directory (so a rewritten Secret reaches it without a restart), holds the admin
// pair, and its size is part of svc's quota check. The script itself is run against the real
// security plugin in test/indexer-security/security-config.test.ts.

const TENANT_ID = '3f1c2a9e-7b4d-4e21-9a0c-5d8e6f7a1b2c';
const objects = await renderTenantChart();
const find = (kind: string, name: string): Manifest => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind}/${name}`);
  return found;
};
const pod = find('StatefulSet', 'monitor-indexer').spec.template.spec;
const byName = (name: string) => pod.containers.find((c: Manifest) => c.name === name);
const sidecar = byName('security-config');
const envOf = Object.fromEntries(
  (sidecar?.env ?? []).map((e: Manifest) => [e.name, e.value]),
) as Record<string, string>;
const env = (name: string): string => {
  const value = envOf[name];
  assert.ok(value, `the sidecar's ${name}`);
  return value;
};
const mountAt = (path: string) =>
  sidecar.volumeMounts.find((m: Manifest) => m.mountPath === path) as Manifest;
const volume = (name: string) => pod.volumes.find((v: Manifest) => v.name === name) as Manifest;
const chartFile = (name: string) =>
  readFile(
    new URL(`../../charts/svc-tenant/charts/monitor/files/${name}`, import.meta.url),
    'utf8',
  );

test('the indexer pod runs the chart’s security-config script in the indexer image', async () => {
  assert.ok(sidecar, 'a security-config container beside the indexer');
  assert.equal(sidecar.image, byName('indexer').image, 'the image’s securityadmin.sh and JDK');
  assert.deepEqual(sidecar.command, ['bash', `${env('SETUP_DIR')}/security-config.sh`]);
  const setup = volume(mountAt(env('SETUP_DIR')).name);
  assert.equal(setup.configMap.name, 'monitor-indexer-setup');
  const data = find('ConfigMap', 'monitor-indexer-setup').data;
  assert.equal(data['security-config.sh'], await chartFile('security-config.sh'));
  // The alert index setup it applies next (docs/adapter.md), the same files the tests apply.
  for (const file of ['svc-ingest-time-pipeline.json', 'svc-alerts-template.json']) {
    assert.equal(data[file], await chartFile(file), file);
  }
});

test('the sidecar sees svc-indexer-security as a directory (updated in place) and the admin pair', () => {
  const security = mountAt(env('SECURITY_DIR'));
  assert.equal(security.subPath, undefined, 'no subPath: the kubelet swaps the files in place');
  assert.equal(security.readOnly, true);
  const secret = volume(security.name).secret;
  assert.equal(secret.secretName, INDEXER_SECURITY_SECRET.name);
  assert.deepEqual(
    secret.items.map((i: Manifest) => i.key).sort(),
    Object.values(INDEXER_SECURITY_SECRET.keys).sort(),
  );
  const certs = mountAt(`${env('INDEXER_HOME')}/certs`);
  assert.equal(certs.subPath, undefined);
  assert.equal(volume(certs.name).secret.secretName, INDEXER_TLS_SECRET.name);
  assert.equal(volume(certs.name).secret.items, undefined, 'every key: CA and the admin pair');
  // What it last applied lives as long as the pod: a new pod applies once more.
  assert.ok(volume(mountAt(env('STATE_DIR')).name).emptyDir);
});

test('the sidecar’s size is the one svc’s quota check adds, and it is hardened like the indexer', () => {
  assert.deepEqual(sidecar.resources, INDEXER_SIDECAR_RESOURCES);
  assert.deepEqual(sidecar.securityContext, byName('indexer').securityContext);
});

test('no pod template renders the indexer TLS revision: svc’s patch owns it and helm never reverts it', () => {
  for (const o of objects.filter((x) => x.spec?.template)) {
    assert.equal(
      o.spec.template.metadata?.annotations?.[INDEXER_TLS_REVISION],
      undefined,
      `${o.kind}/${o.metadata.name}`,
    );
  }
});

test('§8 svc’s quota check counts the sidecar: components that would fill requests.memory to the last MiB without it are refused before Helm', async () => {
  const defaults = parse(
    await readFile(new URL('../../charts/svc-tenant/values.yaml', import.meta.url), 'utf8'),
  );
  const input = (casesMemory: string) => ({
    tenant: { id: TENANT_ID, slug: 'acme', displayName: 'Acme' },
    config: {
      slug: 'acme',
      display_name: 'Acme',
      components: {
        cases: {
          requests: { cpu: '300m', memory: casesMemory },
          limits: { cpu: '1', memory: '2Gi' },
        },
      },
    } as never,
    install: {
      msspId: TENANT_ID,
      installId: TENANT_ID,
      namespace: 'svc-system',
      serviceAccount: 'svc',
    },
    settings: {
      adapterImage: { repository: 'registry.test/svc-adapter', tag: '0.1.0', digest: '' },
      apiUrl: 'http://svc.svc-system.svc:8080',
      storageClassName: '',
      defaultLlm: { provider: 'openai', baseUrl: 'https://llm.example.test/v1', model: 'm' },
    },
    chartDefaults: defaults,
    hasLlmKey: false,
  });
  // The defaults request 7.875Gi + the sidecar's 64Mi of 8Gi: 64Mi are left.
  assert.doesNotThrow(() => renderTenantValues(input('1088Mi')));
  assert.throws(
    () => renderTenantValues(input('1089Mi')),
    (error: unknown) =>
      error instanceof RenderError && /\/resourceQuota\/requests\/memory/.test(error.message),
  );
});
