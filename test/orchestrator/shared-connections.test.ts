import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { test } from 'node:test';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { countedKubeConfig } from '../../src/cluster/kube-requests.ts';
import {
  SHARED_DISPATCHER_MAX_AGE_MS,
  sharedConnections,
} from '../../src/cluster/shared-connections.ts';
import { getTestCluster } from '../support/cluster.ts';

/**
 * Issue 33: every request of the orchestrator's clients used to open its own TLS connection
 * (client-node 2.0 makes an undici Agent per request). Connections are counted where undici
 * opens them (its `undici:client:connected` diagnostics channel), against the real API server.
 */
async function connectionsFor(kubeConfig: KubeConfig, requests: number): Promise<number> {
  let connected = 0;
  const onConnect = () => {
    connected++;
  };
  subscribe('undici:client:connected', onConnect);
  try {
    // A new client per request, as the orchestrator's code makes them (makeApiClient per call).
    for (let i = 0; i < requests; i++)
      await kubeConfig.makeApiClient(CoreV1Api).listNamespace({ limit: 1 });
  } finally {
    unsubscribe('undici:client:connected', onConnect);
  }
  return connected;
}

test('issue 33 the orchestrator reuses one connection pool for all its API requests (not a TLS connection each), and still counts every request', async () => {
  const { kubeConfig } = getTestCluster();
  const counted: string[] = [];
  const shared = countedKubeConfig(sharedConnections(kubeConfig), (verb, resource) =>
    counted.push(`${verb} ${resource}`),
  );
  const unshared = await connectionsFor(kubeConfig, 20);
  const reused = await connectionsFor(shared, 20);
  // Without the wrapper every request connects anew: the test sees what it guards against.
  assert.equal(unshared, 20, 'client-node as is: one connection per request');
  assert.ok(reused <= 1, `${reused} connections for 20 requests`);
  assert.equal(counted.length, 20);
  assert.ok(counted.every((c) => c === 'list namespaces'));
});

test('issue 33 the shared pool is replaced after its maximum age (a rotated client certificate is picked up), and the old one closed', async () => {
  const { kubeConfig } = getTestCluster();
  let clock = 0;
  const shared = sharedConnections(kubeConfig, () => clock);
  assert.equal(await connectionsFor(shared, 5), 1);
  clock += SHARED_DISPATCHER_MAX_AGE_MS - 1;
  assert.equal(await connectionsFor(shared, 3), 0, 'the same pool within its age');
  clock += 2;
  assert.equal(await connectionsFor(shared, 3), 1, 'a new pool after it');
});
