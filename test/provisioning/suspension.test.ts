import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REPLICAS_BEFORE_SUSPEND } from '../../src/orchestrator/suspension.ts';
import { waitUntil } from '../support/cluster.ts';
import {
  activeTenant,
  lifecycle,
  type Orchestration,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

// Issue 15 "Suspension", the data plane on the real kube-apiserver: the tenant's workloads go
// to zero replicas with their count saved on them, volumes stay, the resume restores the
// counts, and a suspended tenant can still be decommissioned.
const o = useOrchestration({ timing: { decommissionGraceMs: 1_000 } });

interface Replicas {
  [workload: string]: { replicas: number; saved: string | undefined };
}

async function workloads(orchestration: Orchestration, namespace: string): Promise<Replicas> {
  const [deployments, statefulSets] = await Promise.all([
    orchestration.apps.listNamespacedDeployment({ namespace }),
    orchestration.apps.listNamespacedStatefulSet({ namespace }),
  ]);
  const out: Replicas = {};
  for (const [kind, items] of [
    ['Deployment', deployments.items],
    ['StatefulSet', statefulSets.items],
  ] as const) {
    for (const w of items) {
      out[`${kind}/${w.metadata?.name}`] = {
        replicas: w.spec?.replicas ?? 1,
        saved: w.metadata?.annotations?.[REPLICAS_BEFORE_SUSPEND],
      };
    }
  }
  return out;
}

async function claims(orchestration: Orchestration, namespace: string): Promise<string[]> {
  const list = await orchestration.core.listNamespacedPersistentVolumeClaim({ namespace });
  return list.items.map((c) => c.metadata?.name ?? '').sort();
}

async function dataPlane(orchestration: Orchestration, id: string): Promise<string | undefined> {
  const { rows } = await orchestration.db.pools.mssp.query<{ data_plane: string }>(
    'SELECT data_plane FROM tenants WHERE id = $1',
    [id],
  );
  return rows[0]?.data_plane;
}

test('issue 15 suspend scales every workload to 0 (count saved in an annotation, PVCs kept); a re-run after a crash keeps the saved counts; resume restores them; a suspended tenant can be decommissioned', {
  timeout: 600_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'pause');
  const namespace = `tenant-${slug}`;
  const running = await workloads(o, namespace);
  assert.ok(Object.keys(running).length >= 2, 'the tenant package has workloads');
  assert.ok(
    Object.values(running).some((w) => w.replicas > 0),
    'something runs before the suspension',
  );
  assert.ok(Object.values(running).every((w) => w.saved === undefined));
  const volumes = await claims(o, namespace);
  assert.ok(volumes.length > 0, 'the tenant package has volumes');

  const suspended = await o.admin.mssp.suspend({ params: { tenant_id: id }, body: {} });
  assert.equal(suspended.status, 200);
  await waitForStep(o, id, 'step:data_plane_suspended', 120_000);
  const stopped = await workloads(o, namespace);
  for (const [name, before] of Object.entries(running)) {
    assert.deepEqual(stopped[name], { replicas: 0, saved: String(before.replicas) }, name);
  }
  assert.deepEqual(await claims(o, namespace), volumes, 'PVCs are kept');
  assert.equal(await dataPlane(o, id), 'stopped');

  // A crash between the scale-down and its record: the orchestrator runs the suspension again
  // over workloads already at 0, and must keep the counts saved the first time, not 0.
  await o.db.pools.mssp.query(`UPDATE tenants SET data_plane = 'stopping' WHERE id = $1`, [id]);
  o.orchestrator.kick();
  await waitUntil('the suspension re-run', async () =>
    (await dataPlane(o, id)) === 'stopped' ? true : undefined,
  );
  await o.orchestrator.idle();
  assert.deepEqual(await workloads(o, namespace), stopped, 'saved counts unchanged by a re-run');

  const resumed = await o.admin.mssp.resume({ params: { tenant_id: id }, body: {} });
  assert.equal(resumed.status, 200);
  assert.equal(resumed.status === 200 && resumed.body.tenant.state, 'active');
  await waitForStep(o, id, 'step:data_plane_resumed', 120_000);
  assert.deepEqual(await workloads(o, namespace), running, 'counts restored, annotations gone');
  assert.equal(await dataPlane(o, id), 'running');
  assert.deepEqual(await claims(o, namespace), volumes);
  const steps = (await lifecycle(o, id)).filter(
    (s) => s.includes('suspended') || s.includes('data_plane') || s === 'suspended->active',
  );
  assert.deepEqual(steps, [
    'active->suspended',
    'step:data_plane_suspended',
    'step:data_plane_suspended',
    'suspended->active',
    'step:data_plane_resumed',
  ]);

  // Suspended again, then let go: the decommission removes it like an active one.
  assert.equal((await o.admin.mssp.suspend({ params: { tenant_id: id }, body: {} })).status, 200);
  await waitUntil(
    'the second suspension done',
    async () => ((await dataPlane(o, id)) === 'stopped' ? true : undefined),
    120_000,
  );
  const leaving = await o.admin.mssp.decommission({ params: { tenant_id: id } });
  assert.equal(leaving.status, 200);
  assert.equal(leaving.status === 200 && leaving.body.tenant.state, 'decommissioning');
  await waitForState(o, id, 'soft-deleted', 240_000);
});
