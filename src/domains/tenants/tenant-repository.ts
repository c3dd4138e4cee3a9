import type * as s from 'zapatos/schema';
import {
  type KeysetPage,
  type KeysetRequest,
  keyset,
  type SortKey,
  toKeysetPage,
} from '../../db/keyset.ts';
import type { Narrowed } from '../../db/rows.ts';
import type { InstallTx, SystemTx, TenantTx, Transaction } from '../../db/tenant-context.ts';
import type { TenantState } from './tenant-lifecycle.ts';
import { type LifecycleEntry, SlugTakenError, type Tenant } from './tenant-types.ts';

/**
 * SQL on `tenants` and `tenant_lifecycle_events`. `tenants` is an install table (no RLS), so
 * its statements take any transaction; the lifecycle is tenant-scoped and takes a TenantTx.
 *
 * What "exists" means, once for every caller: a tenant exists while its row does, from its
 * creation until the purge deletes it. A soft-deleted tenant exists (MSSP reads show it with
 * its history); what it may still do is the service's rule (tenant-service.ts `requireLive`).
 */
export async function findTenant(tx: Transaction, id: string): Promise<Tenant | undefined> {
  const { rows } = await tx.query<Tenant>('SELECT * FROM tenants WHERE id = $1', [id]);
  return rows[0];
}

/** The tenant an operator names by slug or id (`svc psql --tenant`), soft-deleted included. */
export async function findTenantBySlugOrId(
  tx: Transaction,
  ref: string,
): Promise<Tenant | undefined> {
  const { rows } = await tx.query<Tenant>(
    `SELECT * FROM tenants WHERE slug = $1 OR id::text = lower($1) LIMIT 1`,
    [ref],
  );
  return rows[0];
}

/** A page of tenants, newest first, optionally in one state. */
export async function listTenants(
  tx: InstallTx,
  state: TenantState | undefined,
  page: KeysetRequest,
): Promise<KeysetPage<Tenant>> {
  const k = keyset('created_at', page, 2);
  const { rows } = await tx.query<Tenant & SortKey>(
    `SELECT *, ${k.sortKey} FROM tenants
      WHERE ($1::text IS NULL OR state = $1) AND ${k.after}
      ${k.orderLimit}`,
    [state ?? null, ...k.params],
  );
  return toKeysetPage(rows, page.limit);
}

export async function insertTenant(
  tx: Transaction,
  tenant: Pick<s.tenants.Insertable, 'id' | 'slug' | 'display_name'>,
): Promise<void> {
  try {
    await tx.query('INSERT INTO tenants (id, slug, display_name) VALUES ($1, $2, $3)', [
      tenant.id,
      tenant.slug,
      tenant.display_name,
    ]);
  } catch (error) {
    if ((error as { constraint?: string }).constraint === 'tenants_slug_key') {
      throw new SlugTakenError(String(tenant.slug));
    }
    throw error;
  }
}

/**
 * Compare-and-set of the state machine (tenant-lifecycle.ts): moves the tenant from `from` to
 * `to` only if it is still in `from`. Undefined when it is not.
 */
export async function updateState(
  tx: Transaction,
  move: {
    id: string;
    from: TenantState;
    to: TenantState;
    /** Undefined keeps the error details; null clears them. */
    errorDetails: Record<string, unknown> | null | undefined;
  },
): Promise<{ state_changed_at: Date } | undefined> {
  const setError = move.errorDetails !== undefined;
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'state_changed_at'>>(
    `UPDATE tenants
        SET state = $2, updated_at = now(),
            deleted_at = CASE WHEN $2 = 'soft-deleted' THEN now() ELSE NULL END,
            error_details = CASE WHEN $4 THEN $5::jsonb ELSE error_details END
      WHERE id = $1 AND state = $3
      RETURNING state_changed_at`,
    [move.id, move.to, move.from, setError, setError ? JSON.stringify(move.errorDetails) : null],
  );
  return rows[0];
}

/** Starts the grace period; an upgrade the tenant was waiting for is abandoned. */
export async function setDecommissionAt(tx: Transaction, id: string, at: Date): Promise<void> {
  await tx.query('UPDATE tenants SET decommission_at = $2, upgrade_target = NULL WHERE id = $1', [
    id,
    at,
  ]);
}

/** Clears a failed provisioning's error (a retry); undefined unless pending with an error. */
export async function clearProvisioningError(
  tx: Transaction,
  id: string,
): Promise<Tenant | undefined> {
  const { rows } = await tx.query<Tenant>(
    `UPDATE tenants SET error_details = NULL, updated_at = now()
      WHERE id = $1 AND state = 'pending' AND error_details IS NOT NULL
      RETURNING *`,
    [id],
  );
  return rows[0];
}

/** Records an upgrade request; undefined unless active without a running upgrade. */
export async function setUpgradeTarget(
  tx: Transaction,
  id: string,
  target: string,
): Promise<Tenant | undefined> {
  const { rows } = await tx.query<Tenant>(
    `UPDATE tenants SET upgrade_target = $2, updated_at = now()
      WHERE id = $1 AND state = 'active' AND upgrade_target IS NULL
      RETURNING *`,
    [id, target],
  );
  return rows[0];
}

/** Takes the tenant's advisory lock for the rest of the transaction if it is free. */
export async function tryTenantLock(tx: Transaction, lockKey: string, name: string) {
  const { rows } = await tx.query<{ ok: boolean }>(
    `SELECT pg_try_advisory_xact_lock(${lockKey}) AS ok`,
    [name],
  );
  return rows[0]?.ok === true;
}

export type LifecycleInsert = Narrowed<
  Pick<
    s.tenant_lifecycle_events.Insertable,
    'kind' | 'from_state' | 'to_state' | 'step' | 'config_revision' | 'details' | 'actor'
  >,
  { details: Record<string, unknown> }
>;

/** Appends one TenantLifecycleEvent (spec §6.2) and returns its id. */
export async function insertLifecycleEvent(
  tx: TenantTx,
  tenantId: string,
  event: LifecycleInsert,
): Promise<string> {
  const { rows } = await tx.query<Pick<s.tenant_lifecycle_events.Selectable, 'id'>>(
    `INSERT INTO tenant_lifecycle_events
            (tenant_id, kind, from_state, to_state, step, config_revision, details, actor)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id::text`,
    [
      tenantId,
      event.kind,
      event.from_state ?? null,
      event.to_state ?? null,
      event.step ?? null,
      event.config_revision ?? null,
      JSON.stringify(event.details),
      event.actor,
    ],
  );
  return rows[0]?.id ?? '';
}

/** The tenant's whole lifecycle, oldest first (RLS confines it to the context's tenant). */
export async function listLifecycle(tx: TenantTx): Promise<LifecycleEntry[]> {
  const { rows } = await tx.query<LifecycleEntry>(
    `SELECT id::text, kind, from_state, to_state, step, details, actor, occurred_at
       FROM tenant_lifecycle_events ORDER BY tenant_lifecycle_events.id`,
  );
  return rows;
}

/** A tenant's row (its `id` as `tenant_id`) with its open work and its newest event's time. */
export type FleetTenant = Narrowed<
  Pick<s.tenants.Selectable, 'slug' | 'state'>,
  { state: TenantState }
> & {
  tenant_id: s.tenants.Selectable['id'];
  open_incidents: number;
  pending_reviews: number;
  last_event_at: s.events.Selectable['occurred_at'] | null;
};

/**
 * Cross-tenant rollup: how many tenants are in each state. `tenants` is an install table, so
 * the metrics gauge reads it as svc_app, the fleet view through the System gate.
 */
export async function countByState(
  tx: Transaction,
): Promise<Array<Pick<s.tenants.Selectable, 'state'> & { n: number }>> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'state'> & { n: number }>(
    'SELECT state, count(*)::int AS n FROM tenants GROUP BY state',
  );
  return rows;
}

/** Cross-tenant rollup: each tenant not deleted, with its open work and last event. */
export async function fleetTenants(tx: SystemTx): Promise<FleetTenant[]> {
  const { rows } = await tx.query<FleetTenant>(
    `SELECT t.id AS tenant_id, t.slug, t.state,
            (SELECT count(*)::int FROM investigations i
              WHERE i.tenant_id = t.id AND i.status IN ('open', 'triaging', 'awaiting_review')) AS open_incidents,
            (SELECT count(*)::int FROM pending_reviews r
              WHERE r.tenant_id = t.id AND r.decision IS NULL) AS pending_reviews,
            (SELECT max(e.occurred_at) FROM events e WHERE e.tenant_id = t.id) AS last_event_at
       FROM tenants t
      WHERE t.state <> 'soft-deleted'
      ORDER BY t.slug`,
  );
  return rows;
}
