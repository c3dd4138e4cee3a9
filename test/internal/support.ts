import { issueBootstrapCredential } from '../../src/domains/adapter/adapter-service.ts';
import type { TestApi } from '../support/api.ts';
import type { TestDatabase } from '../support/database.ts';

export type TenantState =
  | 'pending'
  | 'provisioning'
  | 'active'
  | 'decommissioning'
  | 'soft-deleted';

export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

/**
 * Moves a tenant to a state directly (as the orchestrator would), keeping the deleted_at rule.
 * A provisioning tenant also gets the orchestrator's `package_ready` step, so its first
 * heartbeat activates it (spec §3.1 row 3; the heartbeat-before-ready order is proven in
 * test/provisioning/).
 */
export async function setState(db: TestDatabase, tenantId: string, state: TenantState) {
  await db.pools.mssp.query(
    `UPDATE tenants SET state = $2,
            deleted_at = CASE WHEN $2 = 'soft-deleted' THEN now() ELSE NULL END
      WHERE id = $1`,
    [tenantId, state],
  );
  if (state === 'provisioning') {
    await db.pools.mssp.query(
      `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, actor)
       VALUES ($1, 'step', 'package_ready', 'system:orchestrator')`,
      [tenantId],
    );
  }
}

export async function tenantState(db: TestDatabase, tenantId: string): Promise<string | undefined> {
  const { rows } = await db.pools.mssp.query<{ state: string }>(
    'SELECT state FROM tenants WHERE id = $1',
    [tenantId],
  );
  return rows[0]?.state;
}

/** What the MSSP tenant-creation flow does: issue (or rotate) the credential, keep the secret. */
export function issue(db: TestDatabase, tenantId: string): Promise<{ secret: string }> {
  return db.app.withTenant(tenantId, (tx) => issueBootstrapCredential(tx, tenantId));
}

export async function adapterToken(api: TestApi, tenantId: string): Promise<string> {
  return (await api.tokens.mintAdapter({ tenantId })).token;
}

export interface AuditRow {
  action: string;
  actor_principal: string;
  actor_id: string;
  tenant_id: string | null;
  resource_type: string;
  resource_id: string | null;
  before: unknown;
  after: unknown;
  details: Record<string, unknown>;
}

/** Ground truth through the BYPASSRLS role: every audit row of this tenant, oldest first. */
export async function auditRows(db: TestDatabase, tenantId: string): Promise<AuditRow[]> {
  const { rows } = await db.pools.mssp.query<AuditRow>(
    `SELECT action, actor_principal, actor_id, tenant_id, resource_type, resource_id, before,
            after, details
       FROM audit_log WHERE tenant_id = $1 ORDER BY "timestamp", id`,
    [tenantId],
  );
  return rows;
}

export async function lifecycleRows(db: TestDatabase, tenantId: string) {
  const { rows } = await db.pools.mssp.query<{
    kind: string;
    from_state: string | null;
    to_state: string | null;
    actor: string;
  }>(
    `SELECT kind, from_state, to_state, actor FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND kind <> 'step' ORDER BY id`,
    [tenantId],
  );
  return rows;
}

export async function heartbeatRow(db: TestDatabase, tenantId: string) {
  const { rows } = await db.pools.mssp.query<{
    first_seen_at: Date;
    last_seen_at: Date;
    adapter_version: string;
    status: Record<string, unknown>;
  }>(
    `SELECT first_seen_at, last_seen_at, adapter_version, status FROM adapter_heartbeats
      WHERE tenant_id = $1`,
    [tenantId],
  );
  return rows[0];
}

/** A request the typed SDK would refuse to build: raw body text, any headers. */
export async function raw(
  api: TestApi,
  method: string,
  path: string,
  body: string | null,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${api.url}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}
