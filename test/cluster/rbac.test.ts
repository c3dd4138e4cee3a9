import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { createTestNamespace, serviceAccountKubeconfig } from '../../testcluster/harness.ts';
import { getTestCluster } from '../support/cluster.ts';

test('harness: a ServiceAccount without RBAC rights gets 403', { timeout: 60_000 }, async () => {
  const cluster = getTestCluster();
  const namespace = await createTestNamespace(cluster, 'rbac');
  const asServiceAccount = new KubeConfig();
  asServiceAccount.loadFromFile(await serviceAccountKubeconfig(cluster, namespace, 'nobody'));
  const core = asServiceAccount.makeApiClient(CoreV1Api);

  await assert.rejects(core.listNamespacedSecret({ namespace }), (error: unknown) => {
    assert.ok(error instanceof ApiException);
    assert.equal(error.code, 403);
    // The token authenticated (not 401): RBAC names the account it refused.
    assert.match(String(error.body), new RegExp(`system:serviceaccount:${namespace}:nobody`));
    return true;
  });
  const admin = cluster.kubeConfig.makeApiClient(CoreV1Api);
  const secrets = await admin.listNamespacedSecret({ namespace });
  assert.deepEqual(secrets.items, []);
});
