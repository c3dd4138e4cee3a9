import type { TenantTx } from '../db/tenant-context.ts';
import { writeAudit } from '../domains/audit/audit-repository.ts';
import {
  completeConfigTarget,
  dropConfigTarget,
  replaceIntegrations,
  secretRefId,
} from '../domains/tenants/config-revision-repository.ts';
import { findTenant } from '../domains/tenants/tenant-repository.ts';
import type { StoredConfig, Tenant } from '../domains/tenants/tenant-types.ts';
import { ensureIndexerSecrets } from './bootstrap-secrets.ts';
import { ORCHESTRATOR_ACTOR, type OrchestratorDeps } from './context.ts';
import { renderFor, storedConfig } from './release.ts';
import { namespaceOf } from './render.ts';
import { type RolloutOutcome, rollOut } from './rollout.ts';
import { bindServiceIdentity } from './service-identity.ts';
import { recordStep } from './steps.ts';

/** `config_target`, a column sql/0021 adds (read here until the generated row types carry it). */
const targetOf = (tenant: Tenant) =>
  (tenant as Tenant & { config_target?: number | null }).config_target ?? null;

/**
 * The svc-side rows an applied revision defines: its integrations (the adapter's list), with
 * the reference of the integrations Secret for each item holding a credential.
 */
async function applyRows(tx: TenantTx, tenantId: string, config: StoredConfig): Promise<void> {
  const items = config.integrations?.items ?? [];
  const secretId = items.some((i) => i.has_credential)
    ? ((await secretRefId(tx, tenantId, 'integrations')) ?? null)
    : null;
  await replaceIntegrations(
    tx,
    tenantId,
    items.map((i) => ({
      kind: i.kind,
      name: i.name,
      endpoint_url: i.endpoint_url ?? null,
      settings: i.settings ?? {},
      thresholds: i.thresholds ?? {},
      secret_id: i.has_credential ? secretId : null,
    })),
  );
}

/** The outcome in the lifecycle and the audit trail; the tenant row follows (compare-and-set). */
async function record(
  tx: TenantTx,
  tenant: Tenant,
  change: { from: number; target: number; config: StoredConfig },
  outcome: RolloutOutcome,
): Promise<void> {
  const { from, target, config } = change;
  if (outcome.ok) {
    if (await completeConfigTarget(tx, tenant.id, { target, displayName: config.display_name }))
      await applyRows(tx, tenant.id, config);
    await recordStep(tx, tenant.id, 'config_applied', ORCHESTRATOR_ACTOR, {
      revision: target,
      from,
    });
  } else {
    await dropConfigTarget(tx, tenant.id, target);
    await recordStep(tx, tenant.id, 'config_failed', ORCHESTRATOR_ACTOR, {
      revision: target,
      from,
      error: outcome.error,
      rolled_back_to_revision: outcome.rolledBackTo,
    });
  }
  await writeAudit(tx, {
    tenantId: tenant.id,
    actorPrincipal: 'System',
    actorId: ORCHESTRATOR_ACTOR,
    action: outcome.ok ? 'tenant.config.apply' : 'tenant.config.fail',
    resourceType: 'tenant',
    resourceId: tenant.id,
    before: { config_revision: from },
    after: { config_revision: outcome.ok ? target : from },
    details: outcome.ok
      ? { revision: target }
      : { revision: target, error: outcome.error, rolled_back_to_revision: outcome.rolledBackTo },
  });
}

/**
 * The orchestrator's half of `PUT /api/mssp/tenants/{id}/config`: the API recorded revision n
 * as the target; here its values are rendered and rolled out exactly like an upgrade's
 * (rollout.ts). Success makes n the applied revision (`config_applied`); failure rolls the
 * release back and the tenant keeps rendering from the revision it had (`config_failed`).
 * The tenant lock held by the caller keeps an upgrade of the same tenant from running meanwhile.
 */
export async function advanceConfigChange(
  deps: OrchestratorDeps,
  tenantId: string,
  signal: AbortSignal,
): Promise<void> {
  const tenant = await deps.db.withoutTenant((tx) => findTenant(tx, tenantId));
  if (tenant?.state !== 'active') return;
  const target = targetOf(tenant);
  if (target === null) return;
  const version = tenant.chart_version;
  if (version === null) throw new Error(`active tenant ${tenant.id} has no chart version`);
  const config = await deps.db.withTenant(tenant.id, (tx) => storedConfig(tx, tenant.id, target));
  const namespace = namespaceOf(tenant.slug);
  await bindServiceIdentity(deps, namespace);
  const outcome = await rollOut(
    deps,
    namespace,
    async () => {
      await ensureIndexerSecrets(deps, tenant, namespace);
      return renderFor(deps, tenant, version, target);
    },
    signal,
  );
  const change = { from: tenant.config_revision, target, config };
  await deps.db.withTenant(tenant.id, (tx) => record(tx, tenant, change, outcome));
}
