import { setTimeout as sleep } from 'node:timers/promises';
import {
  AdmissionregistrationV1Api,
  ApiException,
  AppsV1Api,
  type V1Deployment,
} from '@kubernetes/client-node';
import type { HelmRunner } from '../../src/cluster/helm.ts';
import type { OrchestratorDeps } from '../../src/orchestrator/context.ts';
import { createOrchestrator, type Orchestrator } from '../../src/orchestrator/orchestrator.ts';
import { createTenantLocks, type TenantLocks } from '../../src/orchestrator/tenant-locks.ts';
import type { Orchestration } from './support.ts';

/**
 * Faults and pauses injected into real parts: an admission policy in the real API server, a
 * helm runner whose next call of one kind in one namespace waits for the test, and the tenant
 * lock held by the test as an orchestrator would hold it.
 */

const probeDeployment = (namespace: string): V1Deployment => ({
  metadata: { name: 'probe', namespace },
  spec: {
    selector: { matchLabels: { app: 'probe' } },
    template: {
      metadata: { labels: { app: 'probe' } },
      spec: { containers: [{ name: 'c', image: 'registry.test/probe:1' }] },
    },
  },
});

/**
 * The real API server refuses every Deployment in `tenant-<slug>` (and in a probe namespace
 * used to see when the policy is in force), so `helm install` fails half-way.
 */
export async function denyDeployments(o: Orchestration, slug: string) {
  const admission = o.cluster.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const apps = o.cluster.kubeConfig.makeApiClient(AppsV1Api);
  const name = `test-deny-${slug}`;
  const probe = `probe-${slug}`;
  await o.core.createNamespace({ body: { metadata: { name: probe } } });
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ['apps'],
              apiVersions: ['v1'],
              operations: ['CREATE'],
              resources: ['deployments'],
            },
          ],
          namespaceSelector: {
            matchExpressions: [
              {
                key: 'kubernetes.io/metadata.name',
                operator: 'In',
                values: [`tenant-${slug}`, probe],
              },
            ],
          },
        },
        validations: [{ expression: 'false', message: 'injected failure: no Deployments here' }],
      },
    },
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: { metadata: { name }, spec: { policyName: name, validationActions: ['Deny'] } },
  });
  const denied = async () =>
    apps
      .createNamespacedDeployment({ namespace: probe, body: probeDeployment(probe), dryRun: 'All' })
      .then(
        () => false,
        // A policy denial reads "… is forbidden: ValidatingAdmissionPolicy …" (HTTP 422 here).
        (error) => error instanceof ApiException && /injected failure/.test(String(error.body)),
      );
  for (let i = 0; !(await denied()); i++) {
    if (i > 200) throw new Error('the injected policy never took effect');
    await sleep(100);
  }
  return {
    async lift() {
      await admission.deleteValidatingAdmissionPolicyBinding({ name });
      await admission.deleteValidatingAdmissionPolicy({ name });
      for (let i = 0; await denied(); i++) {
        if (i > 200) throw new Error('the injected policy never went away');
        await sleep(100);
      }
      await o.core.deleteNamespace({ name: probe });
    },
  };
}

type Paused = 'install' | 'upgrade' | 'uninstall';

export interface Pause {
  /** Resolves once the paused call has been made (the caller is now waiting inside it). */
  reached: Promise<void>;
  /** Lets the call go on to the real helm. */
  release(): void;
}

/** The real helm runner, except that a call armed with hold() waits for the test first. */
export function pausableHelm(inner: HelmRunner): {
  helm: HelmRunner;
  hold(operation: Paused, namespace: string): Pause;
} {
  const holds = new Map<string, { arrive: () => void; released: Promise<void> }>();
  const gate = async (operation: Paused, namespace: string) => {
    const key = `${operation}:${namespace}`;
    const hold = holds.get(key);
    if (!hold) return;
    holds.delete(key);
    hold.arrive();
    await hold.released;
  };
  return {
    helm: {
      ...inner,
      install: (a) => gate('install', a.namespace).then(() => inner.install(a)),
      upgrade: (a) => gate('upgrade', a.namespace).then(() => inner.upgrade(a)),
      uninstall: (a) => gate('uninstall', a.namespace).then(() => inner.uninstall(a)),
    },
    hold(operation, namespace) {
      const reached = Promise.withResolvers<void>();
      const released = Promise.withResolvers<void>();
      holds.set(`${operation}:${namespace}`, {
        arrive: reached.resolve,
        released: released.promise,
      });
      return { reached: reached.promise, release: released.resolve };
    },
  };
}

/** An orchestrator loop of its own over `deps` (start the Orchestration with run: false). */
export function ownOrchestrator(
  o: Orchestration,
  deps: OrchestratorDeps,
): { orchestrator: Orchestrator; locks: TenantLocks; stop(): Promise<void> } {
  const locks = createTenantLocks(o.db.target);
  const orchestrator = createOrchestrator({ ...deps, locks, concurrency: 10 });
  orchestrator.start();
  return {
    orchestrator,
    locks,
    async stop() {
      await orchestrator.stop();
      await locks.close();
    },
  };
}

/** Takes the tenant's lock as an orchestrator does (waiting out a pass that holds it). */
export async function holdTenantLock(
  locks: TenantLocks,
  tenantId: string,
): Promise<() => Promise<void>> {
  for (let i = 0; ; i++) {
    const release = await locks.tryAcquire(tenantId);
    if (release) return release;
    if (i > 1_200) throw new Error(`tenant ${tenantId} stayed locked`);
    await sleep(100);
  }
}
