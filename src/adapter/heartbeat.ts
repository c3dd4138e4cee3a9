import type { Static } from 'typebox';
import type { TenantState as TenantStateSchema } from '../../contracts/mssp.ts';
import { writeAudit } from '../audit/index.ts';
import type { Transaction } from '../db/tenant-context.ts';

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

export interface HeartbeatOutcome {
  tenantState: TenantState;
  activated: boolean;
}

/**
 * Records one heartbeat in the caller's transaction (tenant context set). The first heartbeat
 * that finds the tenant `provisioning` moves it to `active` (spec §3.1, §6.2, §9.4 step 9),
 * with its lifecycle event and audit row in the same transaction. Returns undefined when the
 * tenant row is gone (an adapter token outlives a hard-deleted tenant by up to 8 days).
 */
export async function recordHeartbeat(
  tx: Transaction,
  beat: Heartbeat,
): Promise<HeartbeatOutcome | undefined> {
  const activated = await activateIfProvisioning(tx, beat.tenantId);
  const tenantState = activated ? 'active' : await currentState(tx, beat.tenantId);
  if (tenantState === undefined) return undefined;
  await upsertHeartbeat(tx, beat);
  if (activated) await recordActivation(tx, beat);
  return { tenantState, activated };
}

/**
 * The state test and the write are one statement: two first heartbeats racing each other
 * both reach it, the second waits for the first's row lock and then re-checks
 * `state = 'provisioning'` against the committed row, so exactly one of them transitions.
 */
async function activateIfProvisioning(tx: Transaction, tenantId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE tenants SET state = 'active', updated_at = now()
      WHERE id = $1 AND state = 'provisioning'`,
    [tenantId],
  );
  return rowCount === 1;
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
  await tx.query(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, from_state, to_state, actor, details)
     VALUES ($1, 'transition', 'provisioning', 'active', 'adapter', $2)`,
    [
      beat.tenantId,
      JSON.stringify({ trigger: 'adapter_heartbeat', adapter_version: beat.version }),
    ],
  );
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
