import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { HelmRunner } from '../../src/cluster/helm.ts';
import { countedKubeConfig } from '../../src/cluster/kube-requests.ts';
import { createNamespaceStore } from '../../src/cluster/namespaces.ts';
import { createLogger } from '../../src/log/index.ts';
import { RELEASE_NAME } from '../../src/orchestrator/release.ts';
import { ownOrchestrator } from './inject.ts';
import { activeTenant, lifecycle, tenantRow, useOrchestration, waitForState } from './support.ts';

// The scheduled pass is left at its 5-minute default here: tests run it with reconcile().
// Soft-deleted rows are kept long enough to be seen.
const o = useOrchestration({ timing: { retentionMs: 600_000 } });

const notFound = (error: unknown) => error instanceof ApiException && error.code === 404;

async function deleteNamespaceAndWait(name: string): Promise<void> {
  await o.core.deleteNamespace({ name });
  for (let i = 0; ; i++) {
    const gone = await o.core.readNamespace({ name }).then(() => false, notFound);
    if (gone) return;
    if (i > 1_200) throw new Error(`namespace ${name} never went away`);
    await sleep(100);
  }
}

async function apiTenant(id: string) {
  const res = await o.admin.mssp.getTenant({ params: { tenant_id: id } });
  assert.equal(res.status, 200);
  if (res.status !== 200) throw new Error('unreachable');
  return res.body.tenant;
}

async function driftEvents(id: string) {
  const { rows } = await o.db.pools.mssp.query<{ details: Record<string, unknown> }>(
    `SELECT details FROM tenant_lifecycle_events WHERE tenant_id = $1 AND kind = 'drift' ORDER BY id`,
    [id],
  );
  return rows.map((r) => r.details);
}

test('issue 18 item 7: an active tenant whose namespace was deleted by hand is flagged (event, condition, stream) and repaired', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'drift-ns');
  const namespace = `tenant-${slug}`;
  await deleteNamespaceAndWait(namespace);

  await o.orchestrator.reconcile();
  const tenant = await apiTenant(id);
  assert.equal(tenant.state, 'active');
  assert.deepEqual(tenant.drift?.findings, [
    { object: 'namespace', name: namespace, problem: 'missing', repair: 'recreated' },
    {
      object: 'release',
      name: `${namespace}/${RELEASE_NAME}`,
      problem: 'missing',
      repair: 'reinstalled',
    },
  ]);
  const list = await o.admin.mssp.listTenants({ query: {} });
  assert.equal(list.status, 200);
  const listed = list.status === 200 ? list.body.items.find((t) => t.id === id) : undefined;
  assert.deepEqual(listed?.drift, tenant.drift, 'the list shows the condition too');
  const events = await driftEvents(id);
  assert.equal(events.length, 1);
  assert.deepEqual(events[0]?.findings, tenant.drift?.findings);
  const { rows: stream } = await o.db.pools.mssp.query<{ type: string }>(
    `SELECT type FROM events WHERE tenant_id = $1 AND stream_type = 'tenant_lifecycle'
        AND type = 'tenant.lifecycle.drift'`,
    [id],
  );
  assert.equal(stream.length, 1, 'on the tenant event stream (SSE)');

  // Repaired: svc's namespace with svc's labels, svc's binding, the release, the adapter token.
  const ns = await o.core.readNamespace({ name: namespace });
  assert.equal(ns.metadata?.labels?.['managed-by'], 'svc');
  assert.equal(ns.metadata?.labels?.['tenant-id'], id);
  const rbac = o.cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.readNamespacedRoleBinding({ name: 'svc', namespace });
  assert.equal(
    (await o.deps.helm.status({ release: RELEASE_NAME, namespace }))?.status,
    'deployed',
  );
  await o.core.readNamespacedSecret({ name: 'svc-adapter-token', namespace });

  // The next pass finds the cluster matching again: the condition clears, with one more event.
  await o.orchestrator.reconcile();
  assert.equal((await apiTenant(id)).drift, null);
  const after = await driftEvents(id);
  assert.deepEqual(after.at(-1), { state: 'active', findings: [], resolved: true });
  assert.equal(after.length, 2);
});

test('issue 18 items 7 and 9: a namespace replaced by one without svc labels is flagged, never adopted; a decommission stalled by it shows as the tenant error', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'drift-foreign');
  const namespace = `tenant-${slug}`;
  await deleteNamespaceAndWait(namespace);
  await o.core.createNamespace({ body: { metadata: { name: namespace, labels: { team: 'x' } } } });
  try {
    await o.orchestrator.reconcile();
    const tenant = await apiTenant(id);
    assert.deepEqual(
      tenant.drift?.findings.map((f) => [f.object, f.name, f.problem, f.repair]),
      [['namespace', namespace, 'foreign', 'none']],
    );
    const ns = await o.core.readNamespace({ name: namespace });
    assert.deepEqual(ns.metadata?.labels, {
      team: 'x',
      'kubernetes.io/metadata.name': namespace,
    });
    const rbac = o.cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    const binding = await rbac.readNamespacedRoleBinding({ name: 'svc', namespace }).then(
      () => true,
      (error: unknown) => !notFound(error),
    );
    assert.equal(binding, false, 'svc bound nothing in it');
    assert.equal(await o.deps.helm.status({ release: RELEASE_NAME, namespace }), undefined);
    // The same drift again: nothing new is written.
    await o.orchestrator.reconcile();
    assert.equal((await driftEvents(id)).length, 1);

    // Item 9: the decommission cannot remove a namespace svc does not own; it says so.
    const res = await o.admin.mssp.decommission({ params: { tenant_id: id } });
    assert.equal(res.status, 200);
    let row = await tenantRow(o, id);
    for (let i = 0; !row?.error_details; i++) {
      if (i > 960) throw new Error(`no error recorded: ${JSON.stringify(row)}`);
      await sleep(250);
      row = await tenantRow(o, id);
    }
    assert.equal(row.state, 'decommissioning');
    const error = row.error_details as Record<string, unknown>;
    assert.deepEqual([error.step, error.code], ['decommissioned', 'namespace_conflict']);
    assert.match(String(error.message), /svc's labels/);
    assert.deepEqual((await apiTenant(id)).error_details, error);
    // Further passes retry without repeating the event.
    for (let i = 0; i < 2; i++) {
      await o.orchestrator.runOnce();
      await o.orchestrator.idle();
    }
    const steps = await lifecycle(o, id);
    assert.equal(steps.filter((s) => s === 'error:decommissioned').length, 1, steps.join(', '));
    const still = await o.core.readNamespace({ name: namespace });
    assert.equal(still.metadata?.deletionTimestamp, undefined, 'the foreign namespace survives');
  } finally {
    await deleteNamespaceAndWait(namespace);
  }
  // The cause gone, the decommission completes by itself and the error clears.
  const gone = await waitForState(o, id, 'soft-deleted', 120_000);
  assert.equal(gone.error_details, null);
});

test('issue 18 item 7: a release uninstalled by hand is re-installed by the scheduled reconciliation, and the condition cleared by the next pass', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'drift-rel');
  const namespace = `tenant-${slug}`;
  await o.deps.helm.uninstall({ release: RELEASE_NAME, namespace, timeoutMs: 120_000, wait: true });
  assert.equal(await o.deps.helm.status({ release: RELEASE_NAME, namespace }), undefined);

  // A second orchestrator whose schedule runs every second: nothing here calls reconcile().
  const scheduled = ownOrchestrator(o, {
    ...o.deps,
    timing: { ...o.deps.timing, reconcileMs: 1_000 },
  });
  try {
    // Two events: the repair, then a later pass finding the cluster matching. The start pass
    // runs once, so the second one proves the schedule.
    let events = await driftEvents(id);
    for (let i = 0; events.length < 2; i++) {
      if (i > 1_200) throw new Error(`drift events: ${JSON.stringify(events)}`);
      await sleep(100);
      events = await driftEvents(id);
    }
    assert.deepEqual(events[0]?.findings, [
      {
        object: 'release',
        name: `${namespace}/${RELEASE_NAME}`,
        problem: 'missing',
        repair: 'reinstalled',
      },
    ]);
    assert.deepEqual(events[1], { state: 'active', findings: [], resolved: true });
  } finally {
    await scheduled.stop();
  }
  assert.equal(
    (await o.deps.helm.status({ release: RELEASE_NAME, namespace }))?.status,
    'deployed',
  );
  assert.equal((await tenantRow(o, id))?.state, 'active');
});

test('issue 33: a reconcile pass over tenants that match the cluster spawns no helm process, reads svc namespaces and install Secrets with one LIST each (no namespace GET), costs the same fixed number of requests per tenant, and logs one line saying what it did', {
  timeout: 400_000,
}, async () => {
  await activeTenant(o, 'pass-cost');
  const counts = new Map<string, number>();
  const kubeConfig = countedKubeConfig(o.deps.kubeConfig, (verb, resource) => {
    const key = `${verb} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  });
  const helmCalls: string[] = [];
  const helm: HelmRunner = { ...o.deps.helm };
  for (const op of ['status', 'install', 'upgrade', 'uninstall', 'values', 'manifest'] as const) {
    const inner = o.deps.helm[op] as (a: never) => Promise<unknown>;
    (helm as unknown as Record<string, unknown>)[op] = (a: never) => {
      helmCalls.push(op);
      return inner(a);
    };
  }
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger(
    'info',
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
          lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    }),
  );
  const own = ownOrchestrator(o, {
    ...o.deps,
    kubeConfig,
    namespaces: createNamespaceStore(kubeConfig),
    helm,
    logger,
  });
  try {
    await own.orchestrator.reconcile(); // after the start pass, which repaired nothing either
    counts.clear();
    helmCalls.length = 0;
    const started = performance.now();
    await own.orchestrator.reconcile();
    const ms = performance.now() - started;
    const { rows } = await o.db.pools.mssp.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM tenants WHERE state = 'active' AND deleted_at IS NULL`,
    );
    const tenants = rows[0]?.n ?? 0;
    assert.ok(tenants >= 1);
    assert.deepEqual(helmCalls, [], 'no helm process when nothing drifted');
    const seen = JSON.stringify(Object.fromEntries(counts));
    assert.equal(counts.get('list namespaces'), 1, seen);
    assert.equal(counts.get('get namespaces'), undefined, seen);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    // Fixed: the snapshot's two LISTs. Per tenant: the release LIST in its namespace and the
    // maintenance reads svc may only make there (docs/orchestrator.md "What one pass costs").
    assert.equal(counts.get('list secrets'), 1 + tenants, seen);
    assert.equal(total, 2 + 7 * tenants, seen);
    // The pass's own account (what bench:provision reads from a real orchestrator's log).
    const passes = lines.filter((l) => l.msg === 'reconciliation pass done');
    assert.equal(passes.length, 3, 'the start pass and the two above'); // queued, never overlapping
    const last = passes.at(-1) as Record<string, number | boolean>;
    assert.equal(last.snapshot, true);
    assert.ok(Number(last.selected) >= tenants, JSON.stringify(last));
    assert.equal(
      Number(last.done) + Number(last.busy) + Number(last.failed),
      last.selected,
      JSON.stringify(last),
    );
    assert.equal(last.failed, 0, JSON.stringify(last));
    assert.ok(typeof last.ms === 'number' && last.ms <= ms + 1, JSON.stringify(last));
    // Reported for docs/orchestrator.md "What one pass costs".
    console.log(
      `# reconcile pass: ${tenants} active tenants, ${total} API requests, ${ms.toFixed(0)} ms`,
      JSON.stringify(Object.fromEntries(counts)),
    );
  } finally {
    await own.stop();
  }
});
