import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException } from '@kubernetes/client-node';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import { RELEASE_NAME } from '../../src/orchestrator/release.ts';
import { problemCode } from '../support/api.ts';
import { denyDeployments as injectDenial } from './inject.ts';
import {
  createTenantVia,
  lifecycle,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

const o = useOrchestration();

const notFound = (error: unknown) => error instanceof ApiException && error.code === 404;

async function gone(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (error) {
    if (notFound(error)) return true;
    throw error;
  }
}

const denyDeployments = (slug: string) => injectDenial(o, slug);

test('§3.1 a failed package install rolls back (uninstall, namespace deleted), keeps the error, stays pending; retry resumes and succeeds', {
  timeout: 400_000,
}, async () => {
  const slug = uniqueSlug('fail');
  const namespace = `tenant-${slug}`;
  const injected = await denyDeployments(slug);
  const id = await createTenantVia(o, tenantConfig(slug));

  const failed = await waitFor(async () => {
    const row = await tenantRow(o, id);
    return row?.error_details ? row : undefined;
  });
  assert.equal(failed.state, 'pending');
  const error = failed.error_details as Record<string, unknown>;
  assert.equal(error.step, 'package_installed');
  assert.equal(error.code, 'helm_failed');
  assert.match(String(error.message) + String(error.stderr), /injected failure/);
  assert.deepEqual(error.rollback, { package: 'uninstalled', namespace: 'deleted' });
  assert.ok(await gone(() => o.core.readNamespace({ name: namespace })), 'namespace deleted');
  // The install-namespace Secrets stay: the retry needs them.
  const names = installSecretNames(id);
  assert.ok(await o.deps.secrets.read(names.bootstrap));
  assert.deepEqual((await lifecycle(o, id)).slice(-4), [
    'step:bootstrap_secrets_written',
    'step:edge_ports_allocated',
    'step:rolled_back',
    'error:package_installed',
  ]);
  const { rows: audit } = await o.db.pools.mssp.query<{ action: string }>(
    `SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY "timestamp"`,
    [id],
  );
  assert.deepEqual(
    audit.map((a) => a.action),
    ['tenant.create', 'tenant.provision.fail'],
  );
  // A failed tenant is not picked up again by itself.
  await sleep(1_500);
  assert.deepEqual((await tenantRow(o, id))?.error_details, failed.error_details);

  // The operator removes the cause and retries: the flow resumes after the last step that
  // still stands (the install-namespace Secrets), so it starts again at the namespace.
  await injected.lift();
  const retry = await o.admin.mssp.retry({ params: { tenant_id: id } });
  assert.equal(retry.status, 202);
  await waitForState(o, id, 'provisioning');
  const steps = await lifecycle(o, id);
  const afterRetry = steps.slice(steps.indexOf('step:retry_requested'));
  assert.deepEqual(afterRetry.slice(0, 6), [
    'step:retry_requested',
    'step:namespace_created',
    'step:bootstrap_secrets_written',
    'step:edge_ports_allocated',
    'step:package_installed',
    'pending->provisioning',
  ]);
  await waitForStep(o, id, 'step:package_ready');
  // The retried install's Secrets work: its adapter, run from them, activates the tenant.
  await o.runAdapter(slug);
  await waitForState(o, id, 'active', 60_000);
  const release = await o.deps.helm.status({ release: RELEASE_NAME, namespace });
  assert.equal(release?.status, 'deployed');
  const { rows: refs } = await o.db.pools.mssp.query<{ purpose: string; version: number }>(
    `SELECT purpose, version FROM tenant_secrets WHERE tenant_id = $1 AND purpose = 'adapter-token'`,
    [id],
  );
  assert.deepEqual(refs, [{ purpose: 'adapter-token', version: 2 }], 'rewritten, version bumped');
});

test('§3.1 retry is refused for a tenant that has not failed and for unknown tenants (roles: the §5.8 matrix)', async () => {
  const slug = uniqueSlug('noretry');
  const id = await createTenantVia(o, tenantConfig(slug));
  const res = await o.admin.mssp.retry({ params: { tenant_id: id } });
  assert.deepEqual([res.status, problemCode(res)], [409, 'invalid_state']);
  const unknown = await o.admin.mssp.retry({
    params: { tenant_id: '00000000-0000-4000-8000-000000000000' },
  });
  assert.deepEqual([unknown.status, problemCode(unknown)], [404, 'tenant_not_found']);
  const { rows } = await o.db.pools.mssp.query(
    `SELECT 1 FROM tenant_lifecycle_events WHERE tenant_id = $1 AND step = 'retry_requested'`,
    [id],
  );
  assert.equal(rows.length, 0, 'nothing recorded');
});

test('§2.5 a hand-made tenant-<slug> without svc labels is never adopted: provisioning fails and leaves it alone', {
  timeout: 120_000,
}, async () => {
  const slug = uniqueSlug('squat');
  const namespace = `tenant-${slug}`;
  await o.core.createNamespace({
    body: { metadata: { name: namespace, labels: { tenant: 'true' } } },
  });
  try {
    const id = await createTenantVia(o, tenantConfig(slug));
    const failed = await waitFor(async () => {
      const row = await tenantRow(o, id);
      return row?.error_details ? row : undefined;
    });
    const error = failed.error_details as Record<string, unknown>;
    assert.deepEqual([error.step, error.code], ['namespace_created', 'namespace_conflict']);
    assert.deepEqual(error.rollback, { namespace: 'not created by svc; left alone' });
    const ns = await o.core.readNamespace({ name: namespace });
    assert.equal(ns.metadata?.deletionTimestamp, undefined, 'the foreign namespace survives');
    assert.deepEqual(ns.metadata?.labels?.['managed-by'], undefined);
  } finally {
    await o.core.deleteNamespace({ name: namespace });
  }
});

async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs = 240_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(250);
  }
}
