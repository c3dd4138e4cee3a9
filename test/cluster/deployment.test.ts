import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AppsV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Deployment,
} from '@kubernetes/client-node';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

test('harness: Deployment reaches readyReplicas via client-node', {
  timeout: 120_000,
}, async () => {
  const cluster = getTestCluster();
  const namespace = await createTestNamespace(cluster, 'deploy');
  const labels = { app: 'web' };
  const deployment: V1Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace },
    spec: {
      replicas: 3,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        // kwok plays the kubelet: the image is never pulled.
        spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
      },
    },
  };

  const objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
  await objects.patch(
    deployment,
    undefined,
    undefined,
    'svc-tests',
    true,
    PatchStrategy.ServerSideApply,
  );

  const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  const ready = await waitUntil('3 ready replicas', async () => {
    const current = await apps.readNamespacedDeployment({ name: 'web', namespace });
    return current.status?.readyReplicas === 3 ? current : undefined;
  });
  assert.equal(ready.status?.readyReplicas, ready.spec?.replicas);
});
