import { writeAudit } from '../domains/audit/audit-repository.ts';
import { installSecretNames } from '../domains/tenants/tenant-creation.ts';
import { tryTransition } from '../domains/tenants/tenant-lifecycle.ts';
import { ORCHESTRATOR_ACTOR, type OrchestratorDeps } from './context.ts';
import {
  describeFailure,
  loadTenant,
  RELEASE_NAME,
  StepFailure,
  type TenantRecord,
} from './provision.ts';
import { inspectNamespace } from './reconcile.ts';
import { namespaceLabels, namespaceOf } from './render.ts';
import { completedSteps, recordStep } from './steps.ts';

/**
 * Spec §3.1 rows 5–6: once the grace period is over (the orchestrator only calls this then),
 * the package is uninstalled, the namespace deleted, the install-namespace Secrets removed and
 * the tenant soft-deleted. Each cluster step is idempotent, so a crash in between repeats it.
 * The rows stay until the retention window ends (purgeTenant).
 *
 * The same path removes a tenant that never became active (issue 18 item 4): whatever its
 * attempts left is removed, what svc never created is not looked at. A decommission that
 * cannot finish (a namespace replaced by one without svc's labels, the cluster refusing) is
 * kept as the tenant's `error_details` and an `error` lifecycle event (item 9), and tried
 * again on every pass, so it completes by itself once the cause is gone.
 */
export async function advanceDecommission(deps: OrchestratorDeps, tenantId: string): Promise<void> {
  const tenant = await deps.db.withoutTenant((tx) => loadTenant(tx, tenantId));
  if (tenant?.state !== 'decommissioning') return;
  const namespace = namespaceOf(tenant.slug);
  let removed: Awaited<ReturnType<typeof removeClusterObjects>>;
  try {
    removed = await removeClusterObjects(deps, tenant);
  } catch (error) {
    await recordStall(deps, tenant, describeFailure('decommissioned', error));
    return;
  }
  await deps.db.withTenant(tenant.id, async (tx) => {
    await recordStep(tx, tenant.id, 'decommissioned', ORCHESTRATOR_ACTOR, {
      namespace,
      release: RELEASE_NAME,
      ...removed,
    });
    await tx.query('UPDATE tenants SET edge_port_pair = NULL WHERE id = $1', [tenant.id]);
    const moved = await tryTransition(tx, {
      tenantId: tenant.id,
      trigger: 'grace_period_ended',
      actor: ORCHESTRATOR_ACTOR,
      details: {
        namespace,
        retention_ends_at: new Date(deps.now().getTime() + deps.timing.retentionMs).toISOString(),
      },
      errorDetails: null,
    });
    if (!moved) return;
    await writeAudit(tx, {
      tenantId: tenant.id,
      actorPrincipal: 'System',
      actorId: ORCHESTRATOR_ACTOR,
      action: 'tenant.soft_delete',
      resourceType: 'tenant',
      resourceId: tenant.id,
      before: { state: 'decommissioning' },
      after: { state: 'soft-deleted' },
      details: { namespace, removed_secrets: removed.removed_secrets },
    });
  });
}

/**
 * Uninstall and namespace delete only in a namespace carrying svc's labels for this tenant
 * (a release lives in its namespace: no namespace, no release). A namespace without those
 * labels is left alone; it stalls the decommission only if svc's record says svc created the
 * tenant's namespace (then someone replaced it, and svc's objects may be inside). A tenant
 * whose namespace step never completed (a conflict, a rolled-back attempt) has nothing there.
 */
async function removeClusterObjects(deps: OrchestratorDeps, tenant: TenantRecord) {
  const namespace = namespaceOf(tenant.slug);
  const ownership = await inspectNamespace(deps, tenant);
  if (ownership === 'foreign') {
    const created = await deps.db.withTenant(tenant.id, async (tx) =>
      (await completedSteps(tx, tenant.id)).has('namespace_created'),
    );
    if (created) {
      throw new StepFailure(
        'decommissioned',
        'namespace_conflict',
        `namespace ${namespace} no longer carries svc's labels for this tenant (replaced?); ` +
          'svc neither uninstalls in it nor deletes it. Remove or relabel it: the decommission ' +
          'then completes by itself',
        { namespace },
      );
    }
  }
  let uninstall = 'nothing to uninstall: no namespace of this tenant';
  let outcome = ownership === 'foreign' ? "not svc's; left alone" : 'absent';
  if (ownership === 'ours' || ownership === 'terminating') {
    uninstall = await deps.helm
      .uninstall({
        release: RELEASE_NAME,
        namespace,
        timeoutMs: deps.timing.helmTimeoutMs,
        wait: true,
      })
      .then(
        () => 'uninstalled',
        // Deleting the namespace removes the release too; the uninstall is the orderly way, not
        // the only one. After a crash between the two, svc's RoleBinding is gone with the
        // namespace and helm answers 403: waiting on it would keep the tenant here forever.
        (error: unknown) => {
          deps.logger.warn(
            { err: error, tenant_id: tenant.id },
            'uninstall failed; deleting the namespace',
          );
          return `failed: ${error instanceof Error ? error.message.slice(0, 500) : String(error)}`;
        },
      );
    await deps.namespaces.remove(namespace, {
      waitMs: deps.timing.namespaceDeleteMs,
      expectLabels: namespaceLabels(tenant.id, deps.install),
    });
    outcome = 'deleted';
  }
  const names = Object.values(installSecretNames(tenant.id));
  for (const name of names) await deps.secrets.remove(name);
  return { uninstall, namespace_removal: outcome, removed_secrets: names };
}

/**
 * Keeps why the decommission cannot finish on the tenant and in the lifecycle (→ event
 * stream), once per distinct cause: the next passes retry without repeating the event.
 */
async function recordStall(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  failure: StepFailure,
): Promise<void> {
  const previous = tenant.error_details;
  if (previous?.code === failure.code && previous.message === failure.message) return;
  deps.logger.warn(
    { tenant_id: tenant.id, code: failure.code, err: failure },
    'decommission stalled; retried on every pass',
  );
  const errorDetails = {
    step: failure.step,
    code: failure.code,
    message: failure.message,
    ...failure.details,
    failed_at: deps.now().toISOString(),
  };
  await deps.db.withTenant(tenant.id, async (tx) => {
    await tx.query(
      `UPDATE tenants SET error_details = $2, updated_at = now()
        WHERE id = $1 AND state = 'decommissioning'`,
      [tenant.id, JSON.stringify(errorDetails)],
    );
    await tx.query(
      `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, details, actor)
       VALUES ($1, 'error', $2, $3, $4)`,
      [tenant.id, failure.step, JSON.stringify(errorDetails), ORCHESTRATOR_ACTOR],
    );
  });
}

/**
 * Every table holding a tenant's rows, children before parents. audit_log is not here on
 * purpose: the trail outlives the tenant and ages out by the audit retention (spec §8).
 * test/tenants/purge.test.ts fails when a table with tenant rows is missing.
 */
export const PURGE_ORDER = [
  'pending_reviews',
  'investigations',
  'events',
  'metrics_hourly',
  'ioc_stats',
  'rule_stats',
  'analyzer_stats',
  'integration_configs',
  'branding_configs',
  'tenant_secrets',
  'tenant_lifecycle_events',
  'adapter_credentials',
  'adapter_heartbeats',
] as const;

/**
 * Spec §3.1 last row: after the retention window the tenant and all its rows are removed.
 * This crosses every tenant table at once, so it runs through the System gate (audited entry)
 * and writes its own audit row, which keeps the tenant's id.
 */
export async function purgeTenant(deps: OrchestratorDeps, tenantId: string): Promise<void> {
  await deps.system.withSystem('tenant.purge', async (tx) => {
    const { rows } = await tx.query<{ slug: string; deleted_at: Date }>(
      `SELECT slug, deleted_at FROM tenants WHERE id = $1 AND state = 'soft-deleted' FOR UPDATE`,
      [tenantId],
    );
    const tenant = rows[0];
    if (!tenant) return;
    const removed: Record<string, number> = {};
    for (const table of PURGE_ORDER) {
      const result = await tx.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantId]);
      removed[table] = result.rowCount ?? 0;
    }
    const sessions = await tx.query(
      `DELETE FROM sessions WHERE tenant_context = $1
          OR user_id IN (SELECT id FROM users WHERE tenant_id = $1)`,
      [tenantId],
    );
    removed.sessions = sessions.rowCount ?? 0;
    const credentials = await tx.query(
      'DELETE FROM password_credentials WHERE user_id IN (SELECT id FROM users WHERE tenant_id = $1)',
      [tenantId],
    );
    removed.password_credentials = credentials.rowCount ?? 0;
    const users = await tx.query('DELETE FROM users WHERE tenant_id = $1', [tenantId]);
    removed.users = users.rowCount ?? 0;
    await tx.query('DELETE FROM tenants WHERE id = $1', [tenantId]);
    await writeAudit(tx, {
      tenantId,
      actorPrincipal: 'System',
      actorId: ORCHESTRATOR_ACTOR,
      action: 'tenant.purge',
      resourceType: 'tenant',
      resourceId: tenantId,
      before: {
        state: 'soft-deleted',
        slug: tenant.slug,
        deleted_at: tenant.deleted_at.toISOString(),
      },
      after: null,
      details: { removed },
    });
  });
}
