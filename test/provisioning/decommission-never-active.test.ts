import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException } from '@kubernetes/client-node';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import { RELEASE_NAME } from '../../src/orchestrator/release.ts';
import { denyDeployments } from './inject.ts';
import {
  createTenantVia,
  lifecycle,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
} from './support.ts';

// An hour of grace: a tenant that never became active must not wait for it.
const o = useOrchestration({
  timing: { decommissionGraceMs: 3_600_000, retentionMs: 600_000 },
});

async function failed(id: string) {
  for (const deadline = Date.now() + 240_000; Date.now() < deadline; await sleep(250)) {
    const row = await tenantRow(o, id);
    if (row?.error_details) return row;
  }
  throw new Error(`tenant ${id} never failed`);
}

async function namespaceExists(name: string): Promise<boolean> {
  return o.core.readNamespace({ name }).then(
    () => true,
    (error: unknown) => {
      if (error instanceof ApiException && error.code === 404) return false;
      throw error;
    },
  );
}

async function auditActions(id: string): Promise<string[]> {
  const { rows } = await o.db.pools.mssp.query<{ action: string }>(
    `SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY "timestamp"`,
    [id],
  );
  return rows.map((r) => r.action);
}

test('issue 18 item 4: a tenant whose provisioning failed is decommissioned without a grace period and leaves nothing in the cluster', {
  timeout: 400_000,
}, async () => {
  const slug = uniqueSlug('never');
  const namespace = `tenant-${slug}`;
  const injected = await denyDeployments(o, slug);
  try {
    const id = await createTenantVia(o, tenantConfig(slug));
    const row = await failed(id);
    assert.deepEqual(
      [row.state, (row.error_details as { code: string }).code],
      ['pending', 'helm_failed'],
    );
    // What the failed attempt left: the install-namespace Secrets (kept for a retry).
    assert.ok(await o.deps.secrets.read(installSecretNames(id).bootstrap));

    const res = await o.admin.mssp.decommission({ params: { tenant_id: id } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.status === 200 && res.body.tenant.state, 'decommissioning');

    await waitForState(o, id, 'soft-deleted', 120_000);
    assert.equal(await namespaceExists(namespace), false);
    assert.equal(await o.deps.helm.status({ release: RELEASE_NAME, namespace }), undefined);
    for (const name of Object.values(installSecretNames(id))) {
      assert.equal(await o.deps.secrets.read(name), undefined, `${name} removed`);
    }
    const left = await o.core.listNamespacedSecret({
      namespace: o.installNamespace,
      labelSelector: `tenant-id=${id}`,
    });
    assert.deepEqual(
      left.items.map((s) => s.metadata?.name),
      [],
      'no Secret of the tenant is left',
    );
    assert.deepEqual((await lifecycle(o, id)).slice(-3), [
      'pending->decommissioning',
      'step:decommissioned',
      'decommissioning->soft-deleted',
    ]);
    const actions = await auditActions(id);
    assert.deepEqual(actions.slice(-2), ['tenant.decommission', 'tenant.soft_delete']);
    const { rows } = await o.db.pools.mssp.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.decommission'`,
      [id],
    );
    assert.equal(rows[0]?.details.never_active, true);
  } finally {
    await injected.lift();
  }
});

test('issue 18 item 4: decommissioning a tenant that failed on a foreign tenant-<slug> leaves that namespace alone', {
  timeout: 200_000,
}, async () => {
  const slug = uniqueSlug('squat');
  const namespace = `tenant-${slug}`;
  await o.core.createNamespace({
    body: { metadata: { name: namespace, labels: { tenant: 'true' } } },
  });
  try {
    const id = await createTenantVia(o, tenantConfig(slug));
    const row = await failed(id);
    assert.equal((row.error_details as { code: string }).code, 'namespace_conflict');
    const res = await o.admin.mssp.decommission({ params: { tenant_id: id } });
    assert.equal(res.status, 200);
    const gone = await waitForState(o, id, 'soft-deleted', 120_000);
    assert.equal(gone.error_details, null);
    const ns = await o.core.readNamespace({ name: namespace });
    assert.equal(ns.metadata?.deletionTimestamp, undefined, 'the foreign namespace survives');
    assert.deepEqual(ns.metadata?.labels?.tenant, 'true');
    for (const name of Object.values(installSecretNames(id))) {
      assert.equal(await o.deps.secrets.read(name), undefined, `${name} removed`);
    }
  } finally {
    await o.core.deleteNamespace({ name: namespace });
  }
});

test('§3.1 a tenant whose provisioning failed on namespace_conflict stays removable: retry repeats the failure, decommission is accepted, the foreign namespace is untouched', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('conflict');
  const namespace = `tenant-${slug}`;
  // Someone else's namespace of the tenant's name: not labelled managed-by=svc.
  const foreign = await o.core.createNamespace({
    body: { metadata: { name: namespace, labels: { team: 'not-svc' } } },
  });
  try {
    const id = await createTenantVia(o, tenantConfig(slug));
    const first = await failed(id);
    assert.deepEqual(
      [first.state, (first.error_details as { code: string }).code],
      ['pending', 'namespace_conflict'],
    );
    const retried = await o.admin.mssp.retry({ params: { tenant_id: id } });
    assert.equal(retried.status, 202, JSON.stringify(retried.body));
    const second = await failed(id);
    assert.equal((second.error_details as { code: string }).code, 'namespace_conflict');
    assert.equal(
      (await lifecycle(o, id)).filter((e) => e === 'step:rolled_back').length,
      2,
      'the retry failed the same way',
    );

    const res = await o.admin.mssp.decommission({ params: { tenant_id: id } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.status === 200 && res.body.tenant.state, 'decommissioning');
    const gone = await waitForState(o, id, 'soft-deleted', 120_000);
    assert.equal(gone.error_details, null);

    // Untouched: the same object, never written to (its resourceVersion moves on any write),
    // and nothing of svc's inside it.
    const ns = await o.core.readNamespace({ name: namespace });
    assert.equal(ns.metadata?.uid, foreign.metadata?.uid);
    assert.equal(ns.metadata?.resourceVersion, foreign.metadata?.resourceVersion);
    assert.equal(ns.metadata?.deletionTimestamp, undefined);
    assert.deepEqual(ns.metadata?.labels, foreign.metadata?.labels);
    const secrets = await o.core.listNamespacedSecret({ namespace });
    assert.deepEqual(
      secrets.items.filter((s) => s.metadata?.labels?.['managed-by'] === 'svc'),
      [],
      "no Secret of svc's in it",
    );
    for (const name of Object.values(installSecretNames(id))) {
      assert.equal(await o.deps.secrets.read(name), undefined, `${name} removed`);
    }
  } finally {
    await o.core.deleteNamespace({ name: namespace });
  }
});
