import { type KeysetPage, type KeysetRequest, keyset, toKeysetPage } from '../../db/keyset.ts';
import { prepared } from '../../db/prepared.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import type { Review } from '../triage/triage-types.ts';

/**
 * SQL of the analyst's desk on one investigation, tenant-scoped: every function runs under RLS,
 * and the explicit `tenant_id = $1` beside it lets the planner use the tenant-led indexes.
 */

/** The investigation row as the detail reads it, with its assignee's email. */
export interface DeskInvestigationRow {
  id: string;
  title: string;
  summary: string | null;
  status: 'open' | 'triaging' | 'awaiting_review' | 'resolved' | 'closed';
  severity: 'info' | 'low' | 'medium' | 'high' | 'critical';
  severity_pinned: boolean;
  verdict: 'true_positive' | 'false_positive' | 'benign' | 'inconclusive' | null;
  source: string | null;
  source_ref: string | null;
  opened_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
  closed_at: Date | null;
  alert_count: number;
  last_alert_at: Date | null;
  assignee_id: string | null;
  assignee_email: string | null;
}

export async function findInvestigation(
  tx: TenantTx,
  tenantId: string,
  id: string,
): Promise<DeskInvestigationRow | undefined> {
  const { rows } = await tx.query<DeskInvestigationRow>(
    prepared(
      'desk.investigation',
      `SELECT i.id, i.title, i.summary, i.status, i.severity, i.severity_pinned, i.verdict,
              i.source, i.source_ref, i.opened_at, i.updated_at, i.resolved_at, i.closed_at,
              i.alert_count, i.last_alert_at, i.assignee_id, u.email AS assignee_email
         FROM investigations i LEFT JOIN users u ON u.id = i.assignee_id
        WHERE i.tenant_id = $1 AND i.id = $2`,
      [tenantId, id],
    ),
  );
  return rows[0];
}

/** The investigation stream's last position and event id (0 / '0' for an empty stream). */
export async function streamHead(
  tx: TenantTx,
  tenantId: string,
  id: string,
): Promise<{ seq: number; event_id: string }> {
  const { rows } = await tx.query<{ seq: number; event_id: string }>(
    prepared(
      'desk.stream-head',
      `SELECT coalesce(max(stream_seq), 0)::int AS seq, coalesce(max(id), 0)::text AS event_id
         FROM events WHERE tenant_id = $1 AND stream_id = $2 AND stream_type = 'investigation'`,
      [tenantId, id],
    ),
  );
  return rows[0] ?? { seq: 0, event_id: '0' };
}

export interface StreamRow {
  stream_seq: number;
  type: string;
  payload: unknown;
  actor: string | null;
  occurred_at: Date;
  /** The acting user's email when the actor is `user:<id>` of a user that still exists. */
  actor_email: string | null;
}

/** The investigation's own stream, oldest first (alerts are on their own streams). */
export async function readStream(tx: TenantTx, tenantId: string, id: string): Promise<StreamRow[]> {
  const { rows } = await tx.query<StreamRow>(
    prepared(
      'desk.stream',
      `SELECT e.stream_seq, e.type, e.payload, e.actor, e.occurred_at, u.email AS actor_email
         FROM events e
         LEFT JOIN users u ON e.actor LIKE 'user:%' AND u.id::text = substr(e.actor, 6)
        WHERE e.tenant_id = $1 AND e.stream_id = $2 AND e.stream_type = 'investigation'
        ORDER BY e.stream_seq`,
      [tenantId, id],
    ),
  );
  return rows;
}

export interface IocRow {
  type: string;
  value: string;
  alerts: string;
  first_seen_at: Date;
  last_seen_at: Date;
}

/** How many indicators and related incidents the detail shows, most frequent / newest first. */
export const DETAIL_IOCS = 100;
export const DETAIL_RELATED = 20;

export async function listIocs(tx: TenantTx, tenantId: string, id: string): Promise<IocRow[]> {
  const { rows } = await tx.query<IocRow>(
    prepared(
      'desk.iocs',
      `SELECT ioc_type AS type, ioc_value AS value, alerts, first_seen_at, last_seen_at
         FROM investigation_iocs WHERE tenant_id = $1 AND investigation_id = $2
        ORDER BY alerts DESC, ioc_type, ioc_value LIMIT $3`,
      [tenantId, id, DETAIL_IOCS],
    ),
  );
  return rows;
}

export interface RelatedRow {
  id: string;
  title: string;
  status: DeskInvestigationRow['status'];
  severity: DeskInvestigationRow['severity'];
  opened_at: Date;
  relations: ('shared_ioc' | 'same_agent')[];
}

// Each source is an index lookup: the indicators by investigation_iocs_tenant_value_idx (a
// bounded number per indicator), the agent by investigations_tenant_agent_idx (sql/0029).
const RELATED = `
  WITH mine AS (
    SELECT ioc_type, ioc_value FROM investigation_iocs
     WHERE tenant_id = $1 AND investigation_id = $2
     ORDER BY alerts DESC, ioc_type, ioc_value LIMIT $4
  ), by_ioc AS (
    SELECT DISTINCT o.investigation_id AS id FROM mine m
     CROSS JOIN LATERAL (
       SELECT investigation_id FROM investigation_iocs o
        WHERE o.tenant_id = $1 AND o.ioc_type = m.ioc_type AND o.ioc_value = m.ioc_value
          AND o.investigation_id <> $2
        LIMIT $5) o
  ), by_agent AS (
    SELECT id FROM investigations
     WHERE tenant_id = $1 AND $3::text <> '' AND source_ref LIKE '%/agent:%'
       AND split_part(source_ref, '/agent:', 2) = $3 AND id <> $2
     ORDER BY opened_at DESC LIMIT $5
  )
  SELECT i.id, i.title, i.status, i.severity, i.opened_at,
         array_remove(ARRAY[
           CASE WHEN i.id IN (SELECT id FROM by_ioc) THEN 'shared_ioc' END,
           CASE WHEN i.id IN (SELECT id FROM by_agent) THEN 'same_agent' END], NULL) AS relations
    FROM investigations i
   WHERE i.tenant_id = $1 AND i.id IN (SELECT id FROM by_ioc UNION SELECT id FROM by_agent)
   ORDER BY i.opened_at DESC, i.id DESC LIMIT $5`;

/** Other incidents sharing an indicator or the agent, newest opened first. */
export async function listRelated(
  tx: TenantTx,
  tenantId: string,
  id: string,
  sourceRef: string | null,
): Promise<RelatedRow[]> {
  // As split_part(source_ref, '/agent:', 2) in the index.
  const agent =
    sourceRef?.includes('/agent:') === true ? (sourceRef.split('/agent:')[1] ?? '') : '';
  const { rows } = await tx.query<RelatedRow>(
    prepared('desk.related', RELATED, [tenantId, id, agent, DETAIL_IOCS, DETAIL_RELATED]),
  );
  return rows;
}

const REVIEW_COLUMNS = `id, investigation_id, proposed_action, action_params, rationale, evidence, risk,
  confidence, requested_by, requested_at, expires_at, decision, decided_by, decided_at, decision_note`;

/** The investigation's latest review, decided or not. */
export async function latestReview(
  tx: TenantTx,
  tenantId: string,
  id: string,
): Promise<Review | undefined> {
  const { rows } = await tx.query<Review>(
    `SELECT ${REVIEW_COLUMNS} FROM pending_reviews
      WHERE tenant_id = $1 AND investigation_id = $2
      ORDER BY requested_at DESC, id DESC LIMIT 1`,
    [tenantId, id],
  );
  return rows[0];
}

/** The fields of an alert summary, picked in SQL so a page never carries whole documents. */
const ALERT_FIELDS = `jsonb_build_object(
    'timestamp', payload #> '{alert,timestamp}',
    'rule', jsonb_build_object(
      'id', payload #> '{alert,rule,id}', 'level', payload #> '{alert,rule,level}',
      'description', payload #> '{alert,rule,description}', 'mitre', payload #> '{alert,rule,mitre}'),
    'agent', payload #> '{alert,agent}',
    'data', jsonb_build_object(
      'srcip', payload #> '{alert,data,srcip}', 'srcport', payload #> '{alert,data,srcport}',
      'dstip', payload #> '{alert,data,dstip}', 'dstport', payload #> '{alert,data,dstport}'))`;

export interface AlertRow {
  id: string;
  occurred_at: Date;
  /** The picked fields (ALERT_FIELDS), or the whole alert document. */
  alert: unknown;
}

/** The investigation's alerts, newest first (events_alert_investigation_time_idx, sql/0029). */
export async function listAlerts(
  tx: TenantTx,
  tenantId: string,
  id: string,
  page: KeysetRequest,
): Promise<KeysetPage<AlertRow>> {
  const k = keyset('occurred_at', page, 3, 'stream_id');
  const { rows } = await tx.query<AlertRow & { sort_key: string }>(
    prepared(
      'desk.alerts',
      `SELECT stream_id AS id, occurred_at, ${ALERT_FIELDS} AS alert, ${k.sortKey}
         FROM events
        WHERE tenant_id = $1 AND type = 'alert.received' AND (payload->>'investigation_id') = $2
          AND ${k.after}
        ${k.orderLimit}`,
      [tenantId, id, ...k.params],
    ),
  );
  return toKeysetPage(rows, page.limit);
}

/** One alert of the investigation with its whole document; undefined when not this one's. */
export async function findAlert(
  tx: TenantTx,
  tenantId: string,
  id: string,
  alertId: string,
): Promise<AlertRow | undefined> {
  const { rows } = await tx.query<AlertRow>(
    `SELECT stream_id AS id, occurred_at, payload->'alert' AS alert FROM events
      WHERE tenant_id = $1 AND stream_id = $2 AND type = 'alert.received'
        AND (payload->>'investigation_id') = $3`,
    [tenantId, alertId, id],
  );
  return rows[0];
}

/** An active MSSP user who may work incidents (spec §2.2: analyst, mssp_admin, platform_admin). */
export async function findWorkingUser(
  tx: TenantTx,
  userId: string,
): Promise<{ id: string; email: string } | undefined> {
  const { rows } = await tx.query<{ id: string; email: string }>(
    `SELECT id, email FROM users
      WHERE id = $1 AND tenant_id IS NULL AND disabled_at IS NULL
        AND role IN ('analyst', 'mssp_admin', 'platform_admin')`,
    [userId],
  );
  return rows[0];
}

/** The emails of MSSP users by id (the timeline names who was assigned). */
export async function userEmails(tx: TenantTx, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await tx.query<{ id: string; email: string }>(
    'SELECT id, email FROM users WHERE id = ANY($1::uuid[]) AND tenant_id IS NULL',
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.email]));
}
