import type * as s from 'zapatos/schema';
import type { Narrowed } from '../../db/rows.ts';
import type { TenantTx, Transaction } from '../../db/tenant-context.ts';
import type { StoredConfig } from './tenant-types.ts';

/**
 * SQL of configuration revisions (spec §6.2): `config_revision` lifecycle events (one per
 * number, sql/0021), the tenant row's applied revision and rollout target, and the outcome steps
 * the orchestrator records (`config_applied`, `config_failed`, details.revision = the number).
 */

/** The tenant row's revision columns (`config_target` from sql/0021). */
export type RevisionColumns = Pick<
  s.tenants.Selectable,
  'id' | 'state' | 'slug' | 'config_revision' | 'config_target' | 'chart_version'
>;

/** The tenant's revision columns, row-locked until the transaction ends (changes serialize). */
export async function lockRevisionColumns(
  tx: Transaction,
  tenantId: string,
): Promise<RevisionColumns | undefined> {
  const { rows } = await tx.query<RevisionColumns>(
    `SELECT id, state, slug, config_revision, config_target, chart_version FROM tenants WHERE id = $1 FOR UPDATE`,
    [tenantId],
  );
  return rows[0];
}

export async function revisionColumns(
  tx: Transaction,
  tenantId: string,
): Promise<RevisionColumns | undefined> {
  const { rows } = await tx.query<RevisionColumns>(
    `SELECT id, state, slug, config_revision, config_target, chart_version FROM tenants WHERE id = $1`,
    [tenantId],
  );
  return rows[0];
}

/** The configuration stored with revision `revision`; undefined when there is none. */
export async function revisionConfig(
  tx: TenantTx,
  tenantId: string,
  revision: number,
): Promise<StoredConfig | undefined> {
  const { rows } = await tx.query<{ config: StoredConfig }>(
    `SELECT details->'config' AS config FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND kind = 'config_revision' AND config_revision = $2`,
    [tenantId, revision],
  );
  return rows[0]?.config;
}

/** The highest revision number ever written (failed ones keep their numbers). */
export async function newestRevisionNumber(tx: TenantTx, tenantId: string): Promise<number> {
  const { rows } = await tx.query<{ n: number | null }>(
    `SELECT max(config_revision) AS n FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND kind = 'config_revision'`,
    [tenantId],
  );
  return rows[0]?.n ?? 0;
}

/** Starts a rollout: compare-and-set on the applied revision of an active tenant with none. */
export async function setConfigTarget(
  tx: Transaction,
  tenantId: string,
  input: { applied: number; target: number },
): Promise<boolean> {
  const result = await tx.query(
    `UPDATE tenants SET config_target = $3, updated_at = now()
      WHERE id = $1 AND state = 'active' AND config_revision = $2 AND config_target IS NULL`,
    [tenantId, input.applied, input.target],
  );
  return result.rowCount === 1;
}

/**
 * The rollout of `target` succeeded: it becomes the applied revision (compare-and-set on the
 * target still asked for), and the display name follows the revision.
 */
export async function completeConfigTarget(
  tx: Transaction,
  tenantId: string,
  input: { target: number; displayName: string },
): Promise<boolean> {
  const result = await tx.query(
    `UPDATE tenants SET config_revision = $2, config_target = NULL, display_name = $3,
            updated_at = now()
      WHERE id = $1 AND config_target = $2`,
    [tenantId, input.target, input.displayName],
  );
  return result.rowCount === 1;
}

/** The rollout of `target` failed: the tenant stays on its applied revision. */
export async function dropConfigTarget(
  tx: Transaction,
  tenantId: string,
  target: number,
): Promise<void> {
  await tx.query(
    `UPDATE tenants SET config_target = NULL, updated_at = now()
      WHERE id = $1 AND config_target = $2`,
    [tenantId, target],
  );
}

type LifecycleEvent = s.tenant_lifecycle_events.Selectable;

/**
 * A revision and its outcome: the `config_revision` event's columns, its `config_revision` as
 * `revision`, and the outcome step's `step`, `details` and `occurred_at` (each null while none
 * was recorded).
 */
export type RevisionRow = Pick<LifecycleEvent, 'actor' | 'occurred_at'> & {
  revision: NonNullable<LifecycleEvent['config_revision']>;
  config: StoredConfig;
  /** `config_applied` / `config_failed`, or null while none was recorded. */
  outcome_step: LifecycleEvent['step'];
  outcome_details: { error?: string; rolled_back_to_revision?: number | null } | null;
  completed_at: LifecycleEvent['occurred_at'] | null;
};

const REVISIONS = `
  SELECT r.config_revision AS revision, r.actor, r.occurred_at, r.details->'config' AS config,
         o.step AS outcome_step, o.details AS outcome_details, o.occurred_at AS completed_at
    FROM tenant_lifecycle_events r
    LEFT JOIN LATERAL (
      SELECT s.step, s.details, s.occurred_at FROM tenant_lifecycle_events s
       WHERE s.tenant_id = r.tenant_id AND s.kind = 'step'
         AND s.step IN ('config_applied', 'config_failed')
         AND s.details->>'revision' = r.config_revision::text
       ORDER BY s.id DESC LIMIT 1) o ON true
   WHERE r.tenant_id = $1 AND r.kind = 'config_revision'`;

/** Revisions older than `before` (all when null), newest first, at most `limit`. */
export async function listRevisions(
  tx: TenantTx,
  tenantId: string,
  page: { before: number | null; limit: number },
): Promise<RevisionRow[]> {
  const { rows } = await tx.query<RevisionRow>(
    `${REVISIONS} AND ($2::int IS NULL OR r.config_revision < $2)
      ORDER BY r.config_revision DESC LIMIT $3`,
    [tenantId, page.before, page.limit],
  );
  return rows;
}

export async function findRevision(
  tx: TenantTx,
  tenantId: string,
  revision: number,
): Promise<RevisionRow | undefined> {
  const { rows } = await tx.query<RevisionRow>(`${REVISIONS} AND r.config_revision = $2`, [
    tenantId,
    revision,
  ]);
  return rows[0];
}

/** An integration's row as a revision defines it (the secret reference resolved by the caller). */
export type IntegrationRowInput = Narrowed<
  Pick<
    s.integration_configs.Insertable,
    'kind' | 'name' | 'endpoint_url' | 'secret_id' | 'settings' | 'thresholds'
  >,
  { settings: Record<string, unknown>; thresholds: Record<string, unknown> }
>;

/**
 * The tenant's integration rows become exactly `items`: rows of items that stay keep their ids
 * (updated in place), the others are deleted.
 */
export async function replaceIntegrations(
  tx: TenantTx,
  tenantId: string,
  items: IntegrationRowInput[],
): Promise<void> {
  await tx.query(
    `DELETE FROM integration_configs WHERE tenant_id = $1
        AND (kind, name) NOT IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
    [tenantId, items.map((i) => i.kind), items.map((i) => i.name)],
  );
  for (const i of items) {
    await tx.query(
      `INSERT INTO integration_configs (tenant_id, kind, name, endpoint_url, settings, thresholds, secret_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (tenant_id, kind, name) DO UPDATE
         SET endpoint_url = excluded.endpoint_url, settings = excluded.settings,
             thresholds = excluded.thresholds, secret_id = excluded.secret_id`,
      [
        tenantId,
        i.kind,
        i.name,
        i.endpoint_url,
        JSON.stringify(i.settings),
        JSON.stringify(i.thresholds),
        i.secret_id,
      ],
    );
  }
}

/** The id of the tenant's Secret reference for `purpose`, if it has one. */
export async function secretRefId(
  tx: TenantTx,
  tenantId: string,
  purpose: string,
): Promise<string | undefined> {
  const { rows } = await tx.query<Pick<s.tenant_secrets.Selectable, 'id'>>(
    'SELECT id FROM tenant_secrets WHERE tenant_id = $1 AND purpose = $2',
    [tenantId, purpose],
  );
  return rows[0]?.id;
}

/** Forgets the Secret reference (its Secret is removed once the change commits). */
export async function deleteSecretRef(
  tx: TenantTx,
  tenantId: string,
  purpose: string,
): Promise<void> {
  await tx.query('DELETE FROM tenant_secrets WHERE tenant_id = $1 AND purpose = $2', [
    tenantId,
    purpose,
  ]);
}
