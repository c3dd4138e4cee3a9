import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { countedKubeConfig, describeRequest } from '../../src/cluster/kube-requests.ts';
import { releaseRecord, takeClusterSnapshot } from '../../src/cluster/snapshot.ts';
import { createMetricsRegistry } from '../../src/metrics/registry.ts';
import { getTestCluster } from '../support/cluster.ts';

/**
 * Issue 33: `svc_kube_requests_total{verb,resource}` counts every request the orchestrator's
 * clients send to the real API server, and the pass snapshot reads metadata only.
 */

test('issue 33 svc_kube_requests_total counts each request to the API server by Kubernetes verb and resource, through wrappers too', async () => {
  const metrics = createMetricsRegistry();
  const inner: string[] = [];
  const { kubeConfig } = getTestCluster();
  // Counted twice (as a test wraps the orchestrator's already counted config): both see it.
  const once = countedKubeConfig(kubeConfig, metrics.kubeRequest);
  const twice = countedKubeConfig(once, (verb, resource) => inner.push(`${verb} ${resource}`));
  const core = twice.makeApiClient(CoreV1Api);
  const apps = twice.makeApiClient(AppsV1Api);
  const name = `kr-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name } } });
  await core.readNamespace({ name });
  await core.listNamespace({ labelSelector: `kubernetes.io/metadata.name=${name}` });
  await apps.listNamespacedDeployment({ namespace: name });
  await core.createNamespacedConfigMap({ namespace: name, body: { metadata: { name: 'c' } } });
  await core.deleteNamespace({ name });
  assert.deepEqual(inner, [
    'create namespaces',
    'get namespaces',
    'list namespaces',
    'list deployments',
    'create configmaps',
    'delete namespaces',
  ]);
  const text = (await metrics.scrape()).body;
  for (const line of [
    'svc_kube_requests_total{verb="create",resource="namespaces"} 1',
    'svc_kube_requests_total{verb="list",resource="deployments"} 1',
    'svc_kube_requests_total{verb="delete",resource="namespaces"} 1',
  ])
    assert.ok(text.includes(line), `${line}\n${text}`);
});

test('issue 33 describeRequest: subresources, watches, collections; a path outside the API is "other"', () => {
  const base = 'https://k.test:6443';
  assert.deepEqual(
    describeRequest('PATCH', `${base}/apis/apps/v1/namespaces/t/statefulsets/m/scale`),
    { verb: 'patch', resource: 'statefulsets/scale' },
  );
  assert.deepEqual(describeRequest('GET', `${base}/api/v1/secrets?watch=true`), {
    verb: 'watch',
    resource: 'secrets',
  });
  assert.deepEqual(describeRequest('DELETE', `${base}/api/v1/namespaces/t/pods`), {
    verb: 'deletecollection',
    resource: 'pods',
  });
  assert.deepEqual(describeRequest('GET', `${base}/version`), { verb: 'list', resource: 'other' });
});

test('issue 33 the pass snapshot: svc namespaces with labels, install Secret names, and a release revision from helm storage labels (the highest version, other releases ignored)', async () => {
  const { kubeConfig } = getTestCluster();
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const name = `snap-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({
    body: { metadata: { name, labels: { 'managed-by': 'svc', 'tenant-id': 'x' } } },
  });
  try {
    // Two revisions as helm stores them (labels only matter here), and a Secret of another release.
    for (const [secret, labels] of [
      [
        'sh.helm.release.v1.svc-tenant.v1',
        { owner: 'helm', name: 'svc-tenant', status: 'superseded', version: '1' },
      ],
      [
        'sh.helm.release.v1.svc-tenant.v2',
        { owner: 'helm', name: 'svc-tenant', status: 'deployed', version: '2' },
      ],
      [
        'sh.helm.release.v1.other.v3',
        { owner: 'helm', name: 'other', status: 'failed', version: '3' },
      ],
    ] as const) {
      await core.createNamespacedSecret({
        namespace: name,
        body: {
          metadata: { name: secret, labels },
          data: { release: Buffer.from('x'.repeat(4096)).toString('base64') },
        },
      });
    }
    const snapshot = await takeClusterSnapshot(kubeConfig, { installNamespace: name });
    assert.deepEqual(snapshot.namespaces.get(name), {
      labels: { 'managed-by': 'svc', 'tenant-id': 'x', 'kubernetes.io/metadata.name': name },
      terminating: false,
    });
    assert.deepEqual([...snapshot.installSecrets].sort(), [
      'sh.helm.release.v1.other.v3',
      'sh.helm.release.v1.svc-tenant.v1',
      'sh.helm.release.v1.svc-tenant.v2',
    ]);
    assert.deepEqual(await releaseRecord(kubeConfig, name, 'svc-tenant'), {
      revision: 2,
      status: 'deployed',
    });
    assert.equal(await releaseRecord(kubeConfig, name, 'absent'), undefined);
  } finally {
    await core.deleteNamespace({ name });
  }
});
