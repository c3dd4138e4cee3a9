import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ApiException, AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const run = promisify(execFile);
const chart = fileURLToPath(new URL('../fixtures/charts/tiny', import.meta.url));

function isNotFound(error: unknown): boolean {
  return error instanceof ApiException && error.code === 404;
}

test('harness: helm install --wait succeeds, uninstall removes it, namespace deletion completes', {
  timeout: 180_000,
}, async () => {
  const cluster = getTestCluster();
  const namespace = await createTestNamespace(cluster, 'helm');
  const helm = (...args: string[]) =>
    run('helm', [...args, '--namespace', namespace, '--kubeconfig', cluster.kubeconfigPath]);

  await helm('install', 'tiny', chart, '--wait', '--timeout', '2m');
  const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  const installed = await apps.readNamespacedDeployment({ name: 'tiny', namespace });
  assert.equal(installed.status?.readyReplicas, 1);
  const { stdout } = await helm('status', 'tiny', '--output', 'json');
  assert.match(stdout, /"status":\s*"deployed"/);

  await helm('uninstall', 'tiny', '--wait', '--timeout', '2m');
  await assert.rejects(apps.readNamespacedDeployment({ name: 'tiny', namespace }), isNotFound);
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  await assert.rejects(
    core.readNamespacedConfigMap({ name: 'tiny-config', namespace }),
    isNotFound,
  );

  await core.deleteNamespace({ name: namespace });
  await waitUntil(`namespace ${namespace} to be gone`, async () => {
    try {
      await core.readNamespace({ name: namespace });
      return undefined;
    } catch (error) {
      if (isNotFound(error)) {
        return true;
      }
      throw error;
    }
  });
});
