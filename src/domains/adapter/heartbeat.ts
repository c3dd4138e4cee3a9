import type { Static } from 'typebox';
import type { TenantState as TenantStateSchema } from '../../../contracts/mssp.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { lockTenant, tryTransition } from '../tenants/tenant-lifecycle.ts';

export type TenantState = Static<typeof TenantStateSchema>;

export interface Heartbeat {
  tenantId: string;
  version: string;
  status: Record<string, string | number | boolean | null>;
  /** Taken from the service clock, so tests can move it. */
  at: Date;
  /** The adapter token's jti, recorded with the activation it caused. */
  jti: string;
}

/**
 * How long an activating heartbeat waits for the tenant's lock: an orchestrator pass over a
 * Ready tenant is short, a rollback (helm uninstall) may outlast it; either way the heartbeat
 * is then noted and the orchestrator completes the activation.
 */
const HEARTBEAT_LOCK_WAIT_MS = 2_000;

export interface HeartbeatOutcome {
  tenantState: TenantState;
  activated: boolean;
}

/**
 * Records one heartbeat in the caller's transaction (tenant context set). The first heartbeat
 * that finds the tenant `provisioning` moves it to `active` (spec §3.1, §6.2, §9.4 step 9),
 * with its lifecycle event and audit row in the same transaction. Returns undefined when the
 * tenant row is gone (an adapter token outlives a hard-deleted tenant by up to 8 days).
 *
 * The activation happens only under the tenant's lock (issue 18 item 5): while the
 * orchestrator holds the tenant (readiness wait, rollback, decommission), a heartbeat is
 * recorded as liveness and answered with the state as it is, `activated: false`, never a
 * resurrection of a tenant being torn down. When that work ends in readiness, the orchestrator
 * completes the activation from the heartbeat noted here.
 */
export async function recordHeartbeat(
  tx: Transaction,
  beat: Heartbeat,
): Promise<HeartbeatOutcome | undefined> {
  const before = await currentState(tx, beat.tenantId);
  if (before === undefined) return undefined;
  // Only a heartbeat that can activate waits for the lock, and only briefly: once the package
  // is Ready the orchestrator holds the tenant for a pass, not for a readiness wait.
  const activated =
    before === 'provisioning' &&
    (await packageReady(tx, beat.tenantId)) &&
    (await lockTenant(tx, beat.tenantId, HEARTBEAT_LOCK_WAIT_MS)) &&
    (await activateIfProvisioning(tx, beat));
  const tenantState = activated ? 'active' : await currentState(tx, beat.tenantId);
  if (tenantState === undefined) return undefined;
  await upsertHeartbeat(tx, beat);
  if (activated) await recordActivation(tx, beat);
  if (tenantState === 'provisioning') await noteEarlyHeartbeat(tx, beat);
  return { tenantState, activated };
}

/**
 * A heartbeat that comes before the package is Ready is remembered as a lifecycle step (in the
 * database's clock, like the state change it is compared with), once per provisioning attempt;
 * the orchestrator completes the activation when it records readiness.
 */
async function noteEarlyHeartbeat(tx: Transaction, beat: Heartbeat): Promise<void> {
  await tx.query(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, details, actor)
     SELECT $1, 'step', 'heartbeat_before_ready', $2, 'adapter'
      WHERE NOT EXISTS (
        SELECT 1 FROM tenant_lifecycle_events e JOIN tenants t ON t.id = e.tenant_id
         WHERE e.tenant_id = $1 AND e.step = 'heartbeat_before_ready'
           AND e.occurred_at >= t.state_changed_at)`,
    [beat.tenantId, JSON.stringify({ adapter_version: beat.version })],
  );
}

/**
 * Spec §3.1 row 3 needs both the heartbeat and a Ready package. Readiness is recorded by the
 * orchestrator as the `package_ready` step; when the heartbeat comes first, the orchestrator
 * completes the activation as it records readiness (tenants/provision.ts markReady). The
 * caller holds the tenant's lock and the transition is a conditional UPDATE, so two first
 * heartbeats racing each other move the tenant exactly once.
 */
async function activateIfProvisioning(tx: Transaction, beat: Heartbeat): Promise<boolean> {
  if (!(await packageReady(tx, beat.tenantId))) return false;
  const moved = await tryTransition(tx, {
    tenantId: beat.tenantId,
    trigger: 'adapter_heartbeat',
    actor: 'adapter',
    details: { adapter_version: beat.version },
  });
  return moved !== undefined;
}

/** Whether this provisioning attempt has recorded `package_ready` (the tenant still provisioning). */
async function packageReady(tx: Transaction, tenantId: string): Promise<boolean> {
  const { rows } = await tx.query<{ ready: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM tenant_lifecycle_events e JOIN tenants t ON t.id = e.tenant_id
        WHERE e.tenant_id = $1 AND e.kind = 'step' AND e.step = 'package_ready'
          AND t.state = 'provisioning' AND e.occurred_at >= t.state_changed_at) AS ready`,
    [tenantId],
  );
  return rows[0]?.ready === true;
}

async function currentState(tx: Transaction, tenantId: string): Promise<TenantState | undefined> {
  const { rows } = await tx.query<{ state: TenantState }>(
    'SELECT state FROM tenants WHERE id = $1',
    [tenantId],
  );
  return rows[0]?.state;
}

async function upsertHeartbeat(tx: Transaction, beat: Heartbeat): Promise<void> {
  // GREATEST: a delayed request never moves last_seen_at backwards.
  await tx.query(
    `INSERT INTO adapter_heartbeats (tenant_id, first_seen_at, last_seen_at, adapter_version, status)
     VALUES ($1, $2, $2, $3, $4)
     ON CONFLICT (tenant_id) DO UPDATE
       SET last_seen_at = GREATEST(adapter_heartbeats.last_seen_at, excluded.last_seen_at),
           adapter_version = excluded.adapter_version,
           status = excluded.status`,
    [beat.tenantId, beat.at, beat.version, JSON.stringify(beat.status)],
  );
}

async function recordActivation(tx: Transaction, beat: Heartbeat): Promise<void> {
  await writeAudit(tx, {
    tenantId: beat.tenantId,
    actorPrincipal: 'Adapter',
    actorId: beat.tenantId,
    action: 'tenant.activate',
    resourceType: 'tenant',
    resourceId: beat.tenantId,
    before: { state: 'provisioning' },
    after: { state: 'active' },
    details: { adapter_version: beat.version, jti: beat.jti },
  });
}
