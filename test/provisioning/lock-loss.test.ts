import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { HelmRunner } from '../../src/cluster/helm.ts';
import { createOrchestrator, type Orchestrator } from '../../src/orchestrator/orchestrator.ts';
import {
  createTenantLocks,
  TenantLockLostError,
  type TenantLockRelease,
  type TenantLocks,
} from '../../src/orchestrator/tenant-locks.ts';
import { ownOrchestrator } from './inject.ts';
import {
  createTenantVia,
  lifecycle,
  PROVISIONED_LIFECYCLE,
  tenantChartCopy,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForStep,
} from './support.ts';

/**
 * Issue 33: a task never goes on without its tenant lock. Orchestrator A is paused inside a
 * helm call of the package_installed step; its lock session is killed from a superuser
 * connection; A must take no further step, orchestrator B takes the tenant over, and every
 * step is recorded once.
 */

let chartsDir: string;
let a: { orchestrator: Orchestrator; locks: TenantLocks };
let b: ReturnType<typeof ownOrchestrator> | undefined;
/** The lock A holds per tenant, as handed to its task. */
const aHolds = new Map<string, TenantLockRelease>();
/** helm calls A made, by operation and namespace. */
const aCalls: string[] = [];
/** Another orchestrator's locks, taking the tenant while A's task is still paused. */
let other: TenantLocks;
let otherHold: TenantLockRelease | undefined;
const statusHolds = new Map<string, { arrive: () => void; released: Promise<void> }>();

after(async () => {
  await b?.stop();
  await a?.orchestrator.stop();
  await a?.locks.close();
  await other?.close();
  await rm(chartsDir, { recursive: true, force: true });
});
const o = useOrchestration(
  async () => {
    chartsDir = await mkdtemp(path.join(tmpdir(), 'svc-charts-'));
    await tenantChartCopy(chartsDir, '0.1.0');
    return { chartsDir, installVersion: '0.1.0', run: false };
  },
  async (o) => {
    const inner = o.deps.helm;
    // A's helm: counted, and its next `status` in an armed namespace waits for the test.
    const helm: HelmRunner = {
      ...inner,
      status: async (args) => {
        aCalls.push(`status:${args.namespace}`);
        const hold = statusHolds.get(args.namespace);
        if (hold) {
          statusHolds.delete(args.namespace);
          hold.arrive();
          await hold.released;
        }
        return inner.status(args);
      },
      install: (args) => {
        aCalls.push(`install:${args.namespace}`);
        return inner.install(args);
      },
      upgrade: (args) => {
        aCalls.push(`upgrade:${args.namespace}`);
        return inner.upgrade(args);
      },
      uninstall: (args) => {
        aCalls.push(`uninstall:${args.namespace}`);
        return inner.uninstall(args);
      },
    };
    other = createTenantLocks(o.db.target);
    const real = createTenantLocks(o.db.target);
    const locks: TenantLocks = {
      async tryAcquire(id) {
        const lock = await real.tryAcquire(id);
        if (lock) aHolds.set(id, lock);
        return lock;
      },
      close: () => real.close(),
    };
    const orchestrator = createOrchestrator({ ...o.deps, helm, locks, concurrency: 4 });
    orchestrator.start();
    a = { orchestrator, locks };
  },
);

async function superuser<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client(o.db.superuser);
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1_200; i++) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`never: ${what}`);
}

test('issue 33 lock loss: a provisioning task whose lock session is killed takes no further step; another orchestrator takes the tenant and every step is recorded once', {
  timeout: 600_000,
}, async () => {
  const slug = uniqueSlug('lockloss');
  const namespace = `tenant-${slug}`;
  const reached = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  statusHolds.set(namespace, { arrive: reached.resolve, released: released.promise });

  const id = await createTenantVia(o, tenantConfig(slug));
  try {
    // A is inside package_installed (helm status first), under its lock.
    await reached.promise;
    const held = aHolds.get(id);
    assert.ok(held && !held.signal.aborted);
    const killed = await superuser<{ pid: number }>(
      `SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'svc-tenant-locks'`,
    );
    assert.equal(killed.length, 1, 'A holds its locks on one session');
    await until(() => held.signal.aborted, "A's holder is told the lock is gone");
    assert.ok(held.signal.reason instanceof TenantLockLostError);
    // Another orchestrator's locks take the tenant at once (A's next polls are refused).
    const taken = await other.tryAcquire(id);
    assert.ok(taken, 'the tenant is free for another orchestrator');
    otherHold = taken;
  } finally {
    released.resolve(); // A's paused call returns; its task must stop at the next one
  }
  await until(() => a.orchestrator.busy() === 0, "A's task ended");
  assert.deepEqual(
    aCalls.filter((c) => c.endsWith(`:${namespace}`)),
    [`status:${namespace}`],
    'A ran no helm install after the lock was lost',
  );
  assert.equal((await tenantRow(o, id))?.error_details, null, 'A recorded no failure either');
  const before = await lifecycle(o, id);
  assert.ok(!before.includes('step:package_installed'), before.join(', '));

  // A stops looking; B takes the tenant over from where the record says.
  await a.orchestrator.stop();
  await otherHold?.();
  b = ownOrchestrator(o, o.deps);
  const steps = await waitForStep(o, id, 'step:package_ready');
  assert.deepEqual(steps, [...PROVISIONED_LIFECYCLE]);
  assert.equal((await tenantRow(o, id))?.state, 'provisioning');
});
