import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { ensureIndexerSecrets } from '../../src/orchestrator/bootstrap-secrets.ts';
import {
  ensureIndexerPki,
  INDEXER_TLS_SECRET,
  indexerPkiProblem,
  indexerTlsRevision,
  issueIndexerPki,
} from '../../src/orchestrator/indexer-pki.ts';
import { INDEXER_TLS_REVISION } from '../../src/orchestrator/indexer-tls-roll.ts';
import { reconcileTenant } from '../../src/orchestrator/reconcile.ts';
import { RELEASE_NAME, renderFor } from '../../src/orchestrator/release.ts';
import { activeTenant, useOrchestration } from '../provisioning/support.ts';

// The periodic reconciler keeps the tenant indexer's certificates fit and rolls the pods that
// read them (docs/charts-tenant.md "Indexer TLS and users"), on the test cluster's
// kube-apiserver with the real chart installed by the real orchestrator. A roll is a change of
// the pod template; the generations of every Deployment and StatefulSet of the namespace show
// exactly which workloads changed.

const o = useOrchestration();
const K = INDEXER_TLS_SECRET.keys;
const DAY = 24 * 3_600_000;
const READERS = [
  'Deployment/monitor-dashboard',
  'Deployment/svc-adapter',
  'StatefulSet/monitor-indexer',
  'StatefulSet/monitor-manager',
];

interface Workload {
  generation: number;
  revision: string | undefined;
}

/** Every Deployment and StatefulSet of the namespace: generation and the revision annotation. */
async function workloads(namespace: string): Promise<Record<string, Workload>> {
  const [deployments, statefulSets] = await Promise.all([
    o.apps.listNamespacedDeployment({ namespace }),
    o.apps.listNamespacedStatefulSet({ namespace }),
  ]);
  const entry = (
    kind: string,
    w: (typeof deployments.items)[number] | (typeof statefulSets.items)[number],
  ) =>
    [
      `${kind}/${w.metadata?.name}`,
      {
        generation: w.metadata?.generation ?? 0,
        revision: w.spec?.template?.metadata?.annotations?.[INDEXER_TLS_REVISION],
      },
    ] as const;
  return Object.fromEntries([
    ...deployments.items.map((d) => entry('Deployment', d)),
    ...statefulSets.items.map((s) => entry('StatefulSet', s)),
  ]);
}

async function tlsSecret(namespace: string) {
  const s = await o.core.readNamespacedSecret({ name: INDEXER_TLS_SECRET.name, namespace });
  const data = Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
  return { data, resourceVersion: s.metadata?.resourceVersion };
}

/** The workloads whose pod template changed between two snapshots. */
function changed(before: Record<string, Workload>, after: Record<string, Workload>): string[] {
  assert.deepEqual(Object.keys(after).sort(), Object.keys(before).sort());
  return Object.keys(after)
    .filter((name) => after[name]?.generation !== before[name]?.generation)
    .sort();
}

test('the reconciler renews the indexer certificates 30 days before expiry and after a CA change, and rolls exactly the indexer, manager, dashboard and adapter; a pass with nothing to do changes nothing', {
  timeout: 600_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'tlsroll');
  const namespace = `tenant-${slug}`;
  const installed = await workloads(namespace);
  assert.ok(
    READERS.every((name) => name in installed),
    `the chart made the four readers: ${Object.keys(installed).join(', ')}`,
  );
  assert.ok(Object.keys(installed).length > READERS.length, 'and other workloads');
  assert.ok(
    Object.values(installed).every((w) => w.revision === undefined),
    'the chart renders no revision: helm never fights the annotation',
  );
  const issued = await tlsSecret(namespace);

  // Nothing to do: the set is fresh and the workloads were installed after it was issued.
  await o.orchestrator.reconcile();
  assert.deepEqual(await workloads(namespace), installed, 'no workload changed');
  assert.equal((await tlsSecret(namespace)).resourceVersion, issued.resourceVersion);

  // 29 days before the node certificate expires: a new set (a new CA: the old one's key is
  // gone), and the four readers roll to it; nothing else changes.
  const expiry = Date.parse(new X509Certificate(issued.data[K.node] ?? '').validTo);
  const late = { ...o.deps, now: () => new Date(expiry - 29 * DAY) };
  await reconcileTenant(late, id);
  const renewed = await tlsSecret(namespace);
  assert.notEqual(renewed.data[K.ca], issued.data[K.ca]);
  assert.equal(indexerPkiProblem(renewed.data, namespace, late.now()), undefined);
  const afterRenewal = await workloads(namespace);
  assert.deepEqual(changed(installed, afterRenewal), READERS);
  for (const name of READERS)
    assert.equal(afterRenewal[name]?.revision, indexerTlsRevision(renewed.data), name);
  // The same pass again has nothing to do.
  await reconcileTenant(late, id);
  assert.deepEqual(await workloads(namespace), afterRenewal);
  assert.equal((await tlsSecret(namespace)).resourceVersion, renewed.resourceVersion);
  // Helm's next upgrade leaves svc's annotation alone, also on a pod template it changes (the
  // adapter's, here through its CPU request): nothing else changes, nothing rolls back.
  const tenant = await o.deps.provisioning.find(id);
  assert.ok(tenant?.chart_version);
  const { chart, values } = await renderFor(o.deps, tenant, tenant.chart_version);
  await o.deps.helm.upgrade({
    release: RELEASE_NAME,
    namespace,
    chart: chart.path,
    values: {
      ...values,
      adapter: {
        ...values.adapter,
        resources: {
          ...values.adapter.resources,
          requests: { ...values.adapter.resources.requests, cpu: '60m' },
        },
      },
    },
    timeoutMs: 180_000,
    wait: false,
  });
  const afterUpgrade = await workloads(namespace);
  assert.deepEqual(changed(afterRenewal, afterUpgrade), ['Deployment/svc-adapter']);
  for (const name of READERS)
    assert.equal(afterUpgrade[name]?.revision, indexerTlsRevision(renewed.data), name);

  // A CA change: root-ca.pem replaced (a compromised CA swapped by hand), so the node and admin
  // certificates no longer chain to it. The next pass issues a whole new set and rolls.
  const foreign = await issueIndexerPki(namespace, new Date());
  await o.core.patchNamespacedSecret(
    {
      name: INDEXER_TLS_SECRET.name,
      namespace,
      body: { data: { [K.ca]: Buffer.from(foreign[K.ca]).toString('base64') } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await o.orchestrator.reconcile();
  const reissued = await tlsSecret(namespace);
  assert.notEqual(reissued.data[K.ca], foreign[K.ca]);
  assert.notEqual(reissued.data[K.node], renewed.data[K.node]);
  assert.equal(indexerPkiProblem(reissued.data, namespace, new Date()), undefined);
  const afterCaChange = await workloads(namespace);
  assert.deepEqual(changed(afterUpgrade, afterCaChange), READERS);
  for (const name of READERS)
    assert.equal(afterCaChange[name]?.revision, indexerTlsRevision(reissued.data), name);

  // An operator asks for a re-issue by deleting the Secret: the next pass issues and rolls.
  await o.core.deleteNamespacedSecret({ name: INDEXER_TLS_SECRET.name, namespace });
  await o.orchestrator.reconcile();
  const requested = await tlsSecret(namespace);
  assert.notEqual(requested.data[K.ca], reissued.data[K.ca]);
  const afterRequest = await workloads(namespace);
  assert.deepEqual(changed(afterCaChange, afterRequest), READERS);

  // A pass that re-issued and stopped before rolling (an orchestrator crash): the next
  // reconciliation finds the readers on the older set and rolls them.
  await o.core.deleteNamespacedSecret({ name: INDEXER_TLS_SECRET.name, namespace });
  const labels = { 'managed-by': 'svc', 'tenant-id': id };
  const crashed = await ensureIndexerPki(o.deps.namespaces, namespace, labels, new Date());
  assert.equal(crashed.action, 'issued');
  assert.deepEqual(await workloads(namespace), afterRequest, 'not rolled yet');
  await o.orchestrator.reconcile();
  const afterResume = await workloads(namespace);
  assert.deepEqual(changed(afterRequest, afterResume), READERS);
  for (const name of READERS)
    assert.equal(afterResume[name]?.revision, indexerTlsRevision(crashed.data), name);
  await o.orchestrator.reconcile();
  assert.deepEqual(await workloads(namespace), afterResume, 'and then nothing more');

  // The pass an upgrade or a configuration change runs first (upgrade.ts, config-rollout.ts)
  // renews and rolls the same way; with nothing to renew it rolls nothing.
  assert.equal((await ensureIndexerSecrets(o.deps, { id }, namespace)).pki, 'kept');
  assert.deepEqual(await workloads(namespace), afterResume);
  const nodeExpiry = Date.parse(new X509Certificate(crashed.data[K.node] ?? '').validTo);
  const beforeUpgrade = { ...o.deps, now: () => new Date(nodeExpiry - 10 * DAY) };
  assert.equal((await ensureIndexerSecrets(beforeUpgrade, { id }, namespace)).pki, 'issued');
  const upgraded = await tlsSecret(namespace);
  const afterUpgradePass = await workloads(namespace);
  assert.deepEqual(changed(afterResume, afterUpgradePass), READERS);
  for (const name of READERS)
    assert.equal(afterUpgradePass[name]?.revision, indexerTlsRevision(upgraded.data), name);
});
