// The analyst's desk on one incident (docs/investigations.md): the detail with its timeline,
// IOCs, related incidents and review, the alerts a page at a time, and the work an analyst does
// on it (assign, note, close, reopen, severity). Every read and write runs under the tenant's
// context (RLS); a write is one event on the investigation's stream at the position the caller
// saw, its audit row beside it, then the read model is folded past it before the answer.
import { randomUUID } from 'node:crypto';
import { isUuid } from '../../../contracts/uuid.ts';
import type { KeysetPage, KeysetRequest } from '../../db/keyset.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import {
  type AppendEventInput,
  appendEvent,
  StreamConflictError,
} from '../events/event-repository.ts';
import type { Review } from '../triage/triage-types.ts';
import {
  type AlertRow,
  type DeskInvestigationRow,
  findAlert,
  findInvestigation,
  findWorkingUser,
  latestReview,
  listAlerts,
  listIocs,
  listRelated,
  readStream,
  type StreamRow,
  streamHead,
  userEmails,
} from './desk-repository.ts';
import {
  type AlertDocumentBody,
  AlertNotFoundError,
  type AlertSummaryBody,
  type CustomerDetailBody,
  type DetailBody,
  InvalidAssigneeError,
  InvestigationAlreadyClosedError,
  InvestigationNotClosedError,
  InvestigationNotFoundError,
  StaleVersionError,
  type TimelineActor,
  type TimelineBody,
  type WorkAction,
  type Worker,
} from './desk-types.ts';

/** Folds the tenant's events past an event id (ProjectionService.catchUp). */
export interface ReadModelCatchUp {
  catchUp(tenantId: string, eventId: bigint): Promise<void>;
}

type PayloadObject = Record<string, unknown>;

function objectOf(value: unknown): PayloadObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as PayloadObject)
    : {};
}

function str(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

function int(value: unknown): number | null {
  const n = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) ? n : null;
}

/** The analyst's fields of a Wazuh alert (docs/investigations.md "Alerts"); absent ones null. */
function alertSummary(row: AlertRow): AlertSummaryBody {
  const alert = objectOf(row.alert);
  const rule = objectOf(alert.rule);
  const agent = objectOf(alert.agent);
  const data = objectOf(alert.data);
  const mitre = objectOf(rule.mitre).id;
  return {
    id: row.id,
    timestamp: row.occurred_at,
    rule: { id: str(rule.id), level: int(rule.level), description: str(rule.description) },
    agent: { id: str(agent.id), name: str(agent.name), ip: str(agent.ip) },
    source: { ip: str(data.srcip), port: str(data.srcport) },
    destination: { ip: str(data.dstip), port: str(data.dstport) },
    mitre: Array.isArray(mitre) ? mitre.filter((m): m is string => typeof m === 'string') : [],
  };
}

function actorOf(row: StreamRow, staff: boolean): TimelineActor {
  const actor = row.actor ?? '';
  if (actor.startsWith('user:')) {
    const id = actor.slice(5);
    return {
      kind: 'user',
      id: staff && isUuid(id) ? id : null,
      email: staff ? row.actor_email : null,
    };
  }
  if (actor.startsWith('worker:')) return { kind: 'pipeline', id: null, email: null };
  return { kind: 'system', id: null, email: null };
}

/**
 * What the customer reads of each event's payload (docs/investigations.md "What the customer
 * sees"): named fields only, so the model's prompt, the redaction record, usage and cost, and
 * any field a later writer adds stay inside. A type not listed shows with no data.
 */
const CUSTOMER_FIELDS: Record<string, readonly string[]> = {
  'investigation.opened': ['title', 'severity', 'rule_id', 'agent_id'],
  'triage.completed': ['verdict', 'severity', 'confidence', 'rationale', 'recommended_action'],
  'analyzer.completed': ['analyzer', 'observable', 'success', 'verdict'],
  'enrichment.completed': ['iocs', 'results'],
  'decision.made': ['action'],
  'review.requested': ['action'],
  'review.approved': ['action'],
  'review.rejected': ['action', 'verdict'],
  'investigation.closed': ['verdict', 'reason', 'by'],
  'investigation.reopened': ['reason'],
  'investigation.severity_changed': ['from', 'to', 'reason'],
  'note.added': ['note_id', 'body', 'visibility'],
};

/** Events the customer never sees: who of the MSSP works on it, and internal notes. */
function hiddenFromCustomer(row: StreamRow): boolean {
  if (row.type === 'investigation.assigned') return true;
  return row.type === 'note.added' && objectOf(row.payload).visibility !== 'shared';
}

function pick(payload: PayloadObject, fields: readonly string[]): PayloadObject {
  return Object.fromEntries(fields.filter((f) => f in payload).map((f) => [f, payload[f]]));
}

/** The user ids an MSSP reader sees resolved to emails: who was (un)assigned. */
const ASSIGNMENT_IDS = ['assignee_id', 'previous_assignee_id'] as const;

function assignedIds(rows: StreamRow[]): string[] {
  const ids = new Set<string>();
  for (const row of rows)
    if (row.type === 'investigation.assigned')
      for (const field of ASSIGNMENT_IDS) {
        const id = objectOf(row.payload)[field];
        if (isUuid(id)) ids.add(id.toLowerCase());
      }
  return [...ids];
}

function staffData(row: StreamRow, emails: Map<string, string>): PayloadObject {
  const payload = objectOf(row.payload);
  if (row.type !== 'investigation.assigned') return payload;
  const named = { ...payload };
  for (const field of ASSIGNMENT_IDS) {
    const id = payload[field];
    named[field.replace('_id', '_email')] = isUuid(id)
      ? (emails.get(id.toLowerCase()) ?? null)
      : null;
  }
  return named;
}

function timeline(rows: StreamRow[], staff: boolean, emails: Map<string, string>): TimelineBody[] {
  return rows
    .filter((row) => staff || !hiddenFromCustomer(row))
    .map((row) => {
      const payload = objectOf(row.payload);
      return {
        seq: row.stream_seq,
        type: row.type,
        occurred_at: row.occurred_at,
        actor: actorOf(row, staff),
        data: staff ? staffData(row, emails) : pick(payload, CUSTOMER_FIELDS[row.type] ?? []),
      };
    });
}

function core(row: DeskInvestigationRow) {
  const { assignee_id: _, assignee_email: __, ...rest } = row;
  return rest;
}

/** The audit action of each kind of work (docs/investigations.md "Audit"). */
function auditAction(action: WorkAction): string {
  if (action.kind === 'assign')
    return action.assigneeId === null ? 'investigation.unassign' : 'investigation.assign';
  return `investigation.${action.kind}`;
}

interface Plan {
  event: AppendEventInput<
    | 'investigation.assigned'
    | 'note.added'
    | 'investigation.closed'
    | 'investigation.reopened'
    | 'investigation.severity_changed'
  >;
  before: Record<string, unknown>;
  after: Record<string, unknown>;
}

/** The event and audit of one piece of work, once its rules hold for the row as it is. */
async function plan(
  tx: TenantTx,
  tenantId: string,
  row: DeskInvestigationRow,
  version: number,
  worker: Worker,
  action: WorkAction,
): Promise<Plan> {
  const on = {
    tenantId,
    streamType: 'investigation' as const,
    streamId: row.id,
    streamSeq: version + 1,
    actor: `user:${worker.userId}`,
  };
  const investigation_id = row.id;
  switch (action.kind) {
    case 'assign': {
      const assignee = action.assigneeId?.toLowerCase() ?? null;
      if (assignee !== null && !(await findWorkingUser(tx, assignee)))
        throw new InvalidAssigneeError(assignee);
      return {
        event: {
          ...on,
          type: 'investigation.assigned',
          payload: {
            investigation_id,
            assignee_id: assignee,
            previous_assignee_id: row.assignee_id,
          },
        },
        before: { assignee_id: row.assignee_id },
        after: { assignee_id: assignee },
      };
    }
    case 'note': {
      const note_id = randomUUID();
      return {
        event: {
          ...on,
          type: 'note.added',
          payload: { investigation_id, note_id, body: action.body, visibility: action.visibility },
        },
        // The tenant reads its audit trail: an internal note's text stays in the event store.
        before: {},
        after: { note_id, visibility: action.visibility },
      };
    }
    case 'close':
      if (row.status === 'closed' || row.status === 'resolved')
        throw new InvestigationAlreadyClosedError(row.status);
      return {
        event: {
          ...on,
          type: 'investigation.closed',
          payload: {
            investigation_id,
            verdict: action.verdict,
            reason: action.reason,
            by: 'analyst',
          },
        },
        before: { status: row.status, verdict: row.verdict },
        after: { status: 'closed', verdict: action.verdict, reason: action.reason },
      };
    case 'reopen':
      if (row.status !== 'closed' && row.status !== 'resolved')
        throw new InvestigationNotClosedError(row.status);
      return {
        event: {
          ...on,
          type: 'investigation.reopened',
          payload: { investigation_id, reason: action.reason },
        },
        before: { status: row.status },
        after: { status: 'open', reason: action.reason },
      };
    case 'severity':
      return {
        event: {
          ...on,
          type: 'investigation.severity_changed',
          payload: {
            investigation_id,
            from: row.severity,
            to: action.severity,
            reason: action.reason,
          },
        },
        before: { severity: row.severity, severity_pinned: row.severity_pinned },
        after: { severity: action.severity, severity_pinned: true, reason: action.reason },
      };
  }
}

export function createDeskService(deps: { db: AppDatabase; readModel: ReadModelCatchUp }) {
  const { db } = deps;

  async function requireInvestigation(
    tx: TenantTx,
    tenantId: string,
    id: string,
  ): Promise<DeskInvestigationRow> {
    const row = await findInvestigation(tx, tenantId, id);
    if (!row) throw new InvestigationNotFoundError(id);
    return row;
  }

  /** The parts both families read, in one transaction (one snapshot). */
  async function read(tenantId: string, id: string, staff: boolean) {
    return db.withTenant(tenantId, async (tx) => {
      const row = await requireInvestigation(tx, tenantId, id);
      const head = await streamHead(tx, tenantId, id);
      const stream = await readStream(tx, tenantId, id);
      const iocs = await listIocs(tx, tenantId, id);
      const related = await listRelated(tx, tenantId, id, row.source_ref);
      const review = await latestReview(tx, tenantId, id);
      const emails = staff ? await userEmails(tx, assignedIds(stream)) : new Map<string, string>();
      return {
        row,
        version: head.seq,
        review,
        iocs: iocs.map((i) => ({ ...i, alerts: Number(i.alerts) })),
        related,
        timeline: timeline(stream, staff, emails),
      };
    });
  }

  async function detail(tenantId: string, investigationId: string): Promise<DetailBody> {
    const id = investigationId.toLowerCase();
    const r = await read(tenantId, id, true);
    return {
      incident: {
        ...core(r.row),
        assignee:
          r.row.assignee_id === null
            ? null
            : { id: r.row.assignee_id, email: r.row.assignee_email ?? '' },
        version: r.version,
      },
      iocs: r.iocs,
      related: r.related,
      review: r.review ?? null,
      timeline: r.timeline,
    };
  }

  return {
    /** The MSSP's detail: the assignee, the version to edit at, every event's whole payload. */
    detail,

    /** The customer's detail (docs/investigations.md "What the customer sees"). */
    async customerDetail(tenantId: string, investigationId: string): Promise<CustomerDetailBody> {
      const r = await read(tenantId, investigationId.toLowerCase(), false);
      return {
        incident: { ...core(r.row), assigned: r.row.assignee_id !== null },
        iocs: r.iocs,
        related: r.related,
        review: r.review ? customerReview(r.review) : null,
        timeline: r.timeline,
      };
    },

    /** The incident's alerts, newest first. */
    async alerts(
      tenantId: string,
      investigationId: string,
      page: KeysetRequest,
    ): Promise<KeysetPage<AlertSummaryBody>> {
      const id = investigationId.toLowerCase();
      return db.withTenant(tenantId, async (tx) => {
        await requireInvestigation(tx, tenantId, id);
        const found = await listAlerts(tx, tenantId, id, page);
        return { rows: found.rows.map(alertSummary), next: found.next };
      });
    },

    /** One alert of the incident, with the document as delivered. */
    async alert(
      tenantId: string,
      investigationId: string,
      alertId: string,
    ): Promise<AlertDocumentBody> {
      const id = investigationId.toLowerCase();
      return db.withTenant(tenantId, async (tx) => {
        await requireInvestigation(tx, tenantId, id);
        const row = await findAlert(tx, tenantId, id, alertId.toLowerCase());
        if (!row) throw new AlertNotFoundError(alertId);
        return { ...alertSummary(row), document: row.alert };
      });
    },

    /**
     * One piece of work at the stream position the caller saw (`version`): the event at
     * version + 1 and its audit row commit together, or nothing does (a moved stream is
     * StaleVersionError). The answer is the detail with the read model folded past the event.
     */
    async work(
      tenantId: string,
      investigationId: string,
      worker: Worker,
      version: number,
      action: WorkAction,
    ): Promise<DetailBody> {
      const id = investigationId.toLowerCase();
      // The status rules read the read model: bring it up to the stream's last event first
      // (an incident the projector has not folded yet is found through its stream).
      const head = await db.withTenant(tenantId, (tx) => streamHead(tx, tenantId, id));
      if (head.seq === 0) throw new InvestigationNotFoundError(id);
      await deps.readModel.catchUp(tenantId, BigInt(head.event_id));
      const written = await db.withTenant(tenantId, async (tx) => {
        const row = await requireInvestigation(tx, tenantId, id);
        const current = await streamHead(tx, tenantId, id);
        if (current.seq !== version) throw new StaleVersionError(version, current.seq);
        const { event, before, after } = await plan(tx, tenantId, row, version, worker, action);
        let stored: Awaited<ReturnType<typeof appendEvent>>;
        try {
          stored = await appendEvent(tx, event);
        } catch (error) {
          if (error instanceof StreamConflictError)
            throw new StaleVersionError(version, error.currentSeq);
          throw error;
        }
        await writeAudit(tx, {
          tenantId,
          actorPrincipal: 'User',
          actorId: worker.userId,
          action: auditAction(action),
          resourceType: 'investigation',
          resourceId: id,
          before,
          after,
          actingAs: worker.actingAs,
        });
        return stored.id;
      });
      await deps.readModel.catchUp(tenantId, BigInt(written));
      return detail(tenantId, id);
    },
  };
}

function customerReview(review: Review): CustomerDetailBody['review'] {
  return {
    proposed_action: review.proposed_action,
    risk: review.risk,
    requested_at: review.requested_at,
    decision: review.decision,
    decided_at: review.decided_at,
  };
}

export type DeskService = ReturnType<typeof createDeskService>;
