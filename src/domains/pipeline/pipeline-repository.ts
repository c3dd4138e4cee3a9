import type * as s from 'zapatos/schema';
import type { TenantTx } from '../../db/tenant-context.ts';
import type { StoredIntegrations } from '../../integrations/tenant-endpoints.ts';
import type {
  ActionableReview,
  PipelineEvent,
  ReviewInsert,
  StoredReview,
} from './pipeline-types.ts';

/**
 * SQL the pipeline reads and writes under its job's tenant: the investigation's own stream,
 * its alerts, the review queue, and the tenant's stored integrations. Every function takes a
 * TenantTx: RLS shows the job's tenant only.
 */

/** The investigation's stream (opening and pipeline steps), in order; empty when not this tenant's. */
export async function readInvestigationStream(
  tx: TenantTx,
  investigationId: string,
): Promise<PipelineEvent[]> {
  const { rows } = await tx.query<
    Pick<s.events.Selectable, 'stream_seq' | 'type' | 'payload' | 'occurred_at'>
  >(
    `SELECT stream_seq, type, payload, occurred_at
       FROM events WHERE stream_id = $1 AND stream_type = 'investigation'
      ORDER BY stream_seq`,
    [investigationId],
  );
  // The stream's events (ingest's opening one, the pipeline's steps) carry JSON object payloads.
  return rows.map((r) => ({
    seq: r.stream_seq,
    type: r.type,
    payload: r.payload as Record<string, unknown>,
    occurredAt: r.occurred_at,
  }));
}

/**
 * The investigation's alert documents, newest first, at most `limit` (the prompt shows at most
 * 40). Served by events_alert_investigation_idx (sql/0019).
 */
export async function readInvestigationAlerts(
  tx: TenantTx,
  investigationId: string,
  limit: number,
): Promise<unknown[]> {
  const { rows } = await tx.query<{ alert: unknown }>(
    `SELECT payload->'alert' AS alert FROM events
      WHERE type = 'alert.received' AND (payload->>'investigation_id') = $1
      ORDER BY id DESC LIMIT $2`,
    [investigationId, limit],
  );
  return rows.map((r) => r.alert);
}

/**
 * The applied configuration revision's `integrations` (where cases and analysis are reached); a
 * revision still rolling out is not in effect yet.
 */
export async function findIntegrations(
  tx: TenantTx,
  tenantId: string,
): Promise<StoredIntegrations | undefined> {
  const { rows } = await tx.query<{ integrations: StoredIntegrations | null }>(
    `SELECT e.details->'config'->'integrations' AS integrations
       FROM tenant_lifecycle_events e JOIN tenants t ON t.id = e.tenant_id
      WHERE e.tenant_id = $1 AND e.kind = 'config_revision'
        AND e.config_revision = t.config_revision`,
    [tenantId],
  );
  return rows[0]?.integrations ?? undefined;
}

/**
 * Whether the projector has folded the investigation's row yet: a review's foreign key points
 * at it (composite with tenant_id, the cross-tenant guard), so decide waits for it.
 */
export async function investigationProjected(
  tx: TenantTx,
  investigationId: string,
): Promise<boolean> {
  const { rows } = await tx.query('SELECT 1 FROM investigations WHERE id = $1', [investigationId]);
  return rows.length > 0;
}

/**
 * Serializes the pipeline's writes on one investigation until the transaction ends: a step's
 * "already done?" check and its append then see each other even when the queue runs two jobs
 * of one key at once (a job re-enqueued while its namesake runs).
 */
export async function lockInvestigation(tx: TenantTx, investigationId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(727021, hashtext($1))', [investigationId]);
}

/** A new review; the decide step writes at most one per investigation (its stream check, under lockInvestigation). */
export async function insertReview(tx: TenantTx, review: ReviewInsert): Promise<StoredReview> {
  const { rows } = await tx.query<StoredReview>(
    `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, action_params,
       rationale, evidence, risk, confidence, requested_by)
     VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7, $8, $9)
     RETURNING id, proposed_action, decision`,
    [
      review.tenantId,
      review.investigationId,
      review.proposedAction,
      JSON.stringify(review.actionParams),
      review.rationale,
      JSON.stringify(review.evidence),
      review.risk,
      review.confidence,
      review.requestedBy,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error('review insert returned no row');
  return row;
}

/** A review with what acting on it needs; undefined when not this tenant's. */
export async function findReview(
  tx: TenantTx,
  reviewId: string,
): Promise<ActionableReview | undefined> {
  const { rows } = await tx.query<ActionableReview>(
    `SELECT id, investigation_id, proposed_action, action_params, rationale, decision, decided_by
       FROM pending_reviews WHERE id = $1`,
    [reviewId],
  );
  return rows[0];
}
