import Type, { type Static, type TSchema } from 'typebox';
import { EVENT_TYPES, type EventType, isEventType } from './event-types.ts';
import { WazuhAlert } from './internal.ts';
import { Severity } from './investigation-values.ts';
import { Uuid } from './route.ts';

/**
 * The event catalog (docs/events.md "Catalog"; spec §2.3 Event): every type svc appends, with
 * its payload exactly as its writer writes it today, who writes it and what it means. Writers
 * can only append a catalog type with its payload (src/domains/events/event-repository.ts),
 * projections name the types they fold from it, and the web app subscribes to its names
 * (contracts/event-types.ts). Payloads are closed (no field a writer does not write) except the
 * Wazuh alert inside `alert.received`, which is stored as the adapter sent it.
 *
 * Stored rows are read defensively all the same: an event written before a payload changed
 * stays as it was (a projection's fold skips what it cannot read).
 */

export { EVENT_TYPES, type EventType, isEventType };

function closed<P extends Parameters<typeof Type.Object>[0]>(properties: P) {
  return Type.Object(properties, { additionalProperties: false });
}

const Verdict = Type.Union([
  Type.Literal('true_positive'),
  Type.Literal('false_positive'),
  Type.Literal('benign'),
  Type.Literal('inconclusive'),
]);
/** What an analyst may close with by hand: a decision, never "inconclusive". */
const AnalystVerdict = Type.Union([
  Type.Literal('true_positive'),
  Type.Literal('false_positive'),
  Type.Literal('benign'),
]);
/** A reason an analyst gives (contracts/mssp/incidents.ts). */
const AnalystReason = Type.String({ minLength: 1, maxLength: 2000 });
const ProposedAction = Type.Union([Type.Literal('open_case'), Type.Literal('close_investigation')]);
const Count = Type.Integer({ minimum: 0 });
const Observable = closed({
  type: Type.Union([
    Type.Literal('ip'),
    Type.Literal('domain'),
    Type.Literal('url'),
    Type.Literal('hash'),
    Type.Literal('email'),
  ]),
  value: Type.String(),
});
/** An indicator found in the alerts (src/domains/pipeline/iocs.ts `Ioc`). */
const Ioc = closed({
  type: Observable.properties.type,
  value: Type.String(),
  internal: Type.Optional(Type.Literal(true)),
});
const AnalyzerVerdict = Type.Union([
  Type.Literal('info'),
  Type.Literal('safe'),
  Type.Literal('suspicious'),
  Type.Literal('malicious'),
]);

/**
 * What a triage outcome records besides the result, when it got that far (docs/pipeline.md
 * "Triage"): the redaction and the prompt as sent, and the model's answer's bookkeeping.
 */
const TriageRecord = {
  redaction: Type.Optional(
    closed({
      fired: Type.Array(closed({ rule: Type.String(), count: Count })),
      placeholders: Count,
    }),
  ),
  prompt: Type.Optional(
    closed({ user: Type.String(), alerts_shown: Count, alerts_omitted: Count }),
  ),
  model: Type.Optional(Type.String()),
  cached: Type.Optional(Type.Boolean()),
  usage: Type.Optional(closed({ inputTokens: Count, outputTokens: Count })),
  answer_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 })),
};

/** A row of tenant_lifecycle_events as the sql/0010 trigger copies it (`tenant.lifecycle.<kind>`). */
function lifecycle<K extends string>(kind: K) {
  return closed({
    lifecycle_id: Type.String({ pattern: '^[0-9]+$' }),
    kind: Type.Literal(kind),
    from_state: Type.Union([Type.String(), Type.Null()]),
    to_state: Type.Union([Type.String(), Type.Null()]),
    step: Type.Union([Type.String(), Type.Null()]),
    details: Type.Object({}, { additionalProperties: true }),
  });
}

/** The stream an event type is appended to (`events.stream_type`). */
export type EventStream = 'alert' | 'investigation' | 'tenant_lifecycle';

export interface CatalogEntry<S extends TSchema = TSchema, St extends EventStream = EventStream> {
  readonly stream: St;
  /** Who appends it (for docs/events.md). */
  readonly writer: string;
  /** What it means (for docs/events.md). */
  readonly description: string;
  readonly payload: S;
}

function entry<St extends EventStream, S extends TSchema>(
  stream: St,
  writer: string,
  description: string,
  payload: S,
): CatalogEntry<S, St> {
  return { stream, writer, description, payload };
}

const INGEST = 'ingest (src/domains/ingest/ingest-service.ts)';
const PIPELINE = 'pipeline job (src/domains/pipeline/pipeline-service.ts)';
const ANALYST = 'analyst (src/domains/investigations/)';
const TRIGGER = 'database trigger on tenant_lifecycle_events (sql/0010)';

export const EVENT_CATALOG = {
  'alert.received': entry(
    'alert',
    INGEST,
    'One Wazuh alert, stored once per source id, on its own stream; `alert` is the document as the adapter sent it.',
    closed({
      source: Type.Literal('wazuh'),
      source_id: Type.String({ minLength: 1 }),
      investigation_id: Uuid,
      severity: Severity,
      alert: WazuhAlert,
    }),
  ),
  'investigation.opened': entry(
    'investigation',
    INGEST,
    'An alert opened a new group (rule, agent): the investigation exists from here on.',
    closed({
      investigation_id: Uuid,
      title: Type.String({ minLength: 1, maxLength: 500 }),
      severity: Severity,
      source: Type.Literal('wazuh'),
      source_ref: Type.String(),
      rule_id: Type.String({ minLength: 1 }),
      agent_id: Type.String({ minLength: 1 }),
    }),
  ),
  'triage.started': entry(
    'investigation',
    PIPELINE,
    'The triage step ran for the first time.',
    closed({ investigation_id: Uuid, attempt: Type.Integer({ minimum: 1 }) }),
  ),
  'triage.completed': entry(
    'investigation',
    PIPELINE,
    "Triage's result: by the tenant's policy (with `groups` when it escalated) or by the model (with the redacted prompt and the answer's bookkeeping).",
    closed({
      investigation_id: Uuid,
      by: Type.Union([Type.Literal('policy'), Type.Literal('model')]),
      verdict: Verdict,
      severity: Severity,
      confidence: Type.Number({ minimum: 0, maximum: 1 }),
      rationale: Type.String(),
      recommended_action: Type.Union([
        Type.Literal('close'),
        Type.Literal('escalate'),
        Type.Literal('review'),
      ]),
      groups: Type.Optional(Type.Array(Type.String())),
      ...TriageRecord,
    }),
  ),
  'triage.failed': entry(
    'investigation',
    PIPELINE,
    'Triage gave no result (`reason`: provider failure, budget, malformed answers, invalid redaction pattern, internal error); an analyst decides.',
    closed({ investigation_id: Uuid, reason: Type.String(), ...TriageRecord }),
  ),
  'analyzer.completed': entry(
    'investigation',
    PIPELINE,
    'One Cortex analyzer run on one public indicator (`error` only when it failed).',
    closed({
      investigation_id: Uuid,
      analyzer: Type.String({ minLength: 1 }),
      observable: Observable,
      success: Type.Boolean(),
      verdict: AnalyzerVerdict,
      duration_ms: Type.Number({ minimum: 0 }),
      error: Type.Optional(Type.String()),
    }),
  ),
  'enrichment.completed': entry(
    'investigation',
    PIPELINE,
    'The indicators of the alerts and every analyzer run, after the `analyzer.completed` events (`note` says why none ran).',
    closed({
      investigation_id: Uuid,
      iocs: Type.Array(Ioc),
      results: Type.Array(
        closed({
          analyzer: Type.String(),
          observable: Observable,
          verdict: AnalyzerVerdict,
          success: Type.Boolean(),
        }),
      ),
      note: Type.Optional(Type.String()),
    }),
  ),
  'decision.made': entry(
    'investigation',
    PIPELINE,
    'The decide step: close now, or ask a human (a review).',
    closed({
      investigation_id: Uuid,
      action: Type.Union([Type.Literal('close'), Type.Literal('review')]),
      reason: Type.String(),
    }),
  ),
  'review.requested': entry(
    'investigation',
    PIPELINE,
    'A proposed action waits for an analyst (a pending_reviews row).',
    closed({
      investigation_id: Uuid,
      review_id: Uuid,
      proposed_action: ProposedAction,
      rationale: Type.String(),
    }),
  ),
  'review.approved': entry(
    'investigation',
    'analyst (src/domains/triage/triage-service.ts)',
    'An analyst approved the proposed action; the act job runs it.',
    closed({ investigation_id: Uuid, review_id: Uuid, action: ProposedAction }),
  ),
  'review.rejected': entry(
    'investigation',
    'analyst (src/domains/triage/triage-service.ts)',
    'An analyst rejected the proposed action: a rejected case closes the investigation with the verdict, a rejected closure sends it back to the analysts (`reopen`).',
    closed({
      investigation_id: Uuid,
      review_id: Uuid,
      action: ProposedAction,
      reopen: Type.Boolean(),
      verdict: Type.Optional(Verdict),
    }),
  ),
  'investigation.closed': entry(
    'investigation',
    `${PIPELINE}; ${ANALYST}`,
    'The investigation is closed: by the pipeline (a confident harmless triage), by an approved closure review, or by an analyst by hand.',
    Type.Union([
      closed({
        investigation_id: Uuid,
        verdict: Verdict,
        reason: Type.String(),
        by: Type.Literal('pipeline'),
      }),
      closed({
        investigation_id: Uuid,
        verdict: Verdict,
        reason: Type.String(),
        by: Type.Literal('review'),
        review_id: Uuid,
      }),
      closed({
        investigation_id: Uuid,
        verdict: AnalystVerdict,
        reason: AnalystReason,
        by: Type.Literal('analyst'),
      }),
    ]),
  ),
  'case.opened': entry(
    'investigation',
    PIPELINE,
    "An approved review's case was opened (or found) in the tenant's TheHive; the investigation is resolved.",
    closed({
      investigation_id: Uuid,
      review_id: Uuid,
      case_id: Type.String({ minLength: 1 }),
      case_number: Type.Integer(),
    }),
  ),
  'action.failed': entry(
    'investigation',
    PIPELINE,
    "An approved review's action could not be carried out (`kind`: the integration error's kind).",
    closed({
      investigation_id: Uuid,
      review_id: Uuid,
      action: Type.Literal('open_case'),
      kind: Type.String(),
      reason: Type.String({ maxLength: 500 }),
    }),
  ),
  'investigation.assigned': entry(
    'investigation',
    ANALYST,
    'The investigation was given to an MSSP user (`assignee_id` null: unassigned).',
    closed({
      investigation_id: Uuid,
      assignee_id: Type.Union([Uuid, Type.Null()]),
      previous_assignee_id: Type.Union([Uuid, Type.Null()]),
    }),
  ),
  'note.added': entry(
    'investigation',
    ANALYST,
    'An analyst wrote a note (markdown; `shared` notes are shown to the customer, `internal` ones never).',
    closed({
      investigation_id: Uuid,
      note_id: Uuid,
      body: Type.String({ minLength: 1, maxLength: 10_000 }),
      visibility: Type.Union([Type.Literal('internal'), Type.Literal('shared')]),
    }),
  ),
  'investigation.reopened': entry(
    'investigation',
    ANALYST,
    'A closed or resolved investigation is open again.',
    closed({ investigation_id: Uuid, reason: AnalystReason }),
  ),
  'investigation.severity_changed': entry(
    'investigation',
    ANALYST,
    "An analyst overrode the investigation's severity.",
    closed({ investigation_id: Uuid, from: Severity, to: Severity, reason: AnalystReason }),
  ),
  'tenant.lifecycle.transition': entry(
    'tenant_lifecycle',
    TRIGGER,
    'The tenant moved from one state to another (stream id: the tenant id).',
    lifecycle('transition'),
  ),
  'tenant.lifecycle.step': entry(
    'tenant_lifecycle',
    TRIGGER,
    'A provisioning step of the tenant finished.',
    lifecycle('step'),
  ),
  'tenant.lifecycle.config_revision': entry(
    'tenant_lifecycle',
    TRIGGER,
    "A revision of the tenant's configuration was applied.",
    lifecycle('config_revision'),
  ),
  'tenant.lifecycle.error': entry(
    'tenant_lifecycle',
    TRIGGER,
    'A lifecycle operation of the tenant failed.',
    lifecycle('error'),
  ),
  'tenant.lifecycle.drift': entry(
    'tenant_lifecycle',
    TRIGGER,
    "The tenant's deployed resources differ from what svc rendered.",
    lifecycle('drift'),
  ),
} as const satisfies { readonly [T in EventType]: CatalogEntry };

/** The payload of one event type, as its writer writes it. */
export type EventPayload<T extends EventType> = Static<(typeof EVENT_CATALOG)[T]['payload']>;

/** The catalog types appended to one kind of stream. */
export type EventTypeOn<S extends EventStream> = {
  [T in EventType]: (typeof EVENT_CATALOG)[T]['stream'] extends S ? T : never;
}[EventType];

/**
 * One event as the tenant event streams send it (the `data:` of GET /api/tenant/events and
 * /api/mssp/tenants/{tenant_id}/events; docs/events.md "Server-sent events"), named by its type
 * (`event:`). `id` is a string because ids are 64-bit.
 */
export type StreamEvent<T extends EventType = EventType> = {
  [K in T]: {
    id: string;
    type: K;
    stream_type: (typeof EVENT_CATALOG)[K]['stream'];
    stream_id: string;
    stream_seq: number;
    occurred_at: string;
    payload: EventPayload<K>;
  };
}[T];

/** Any catalog event, as a discriminated union on `type`. */
export type CatalogEvent = { [T in EventType]: { type: T; payload: EventPayload<T> } }[EventType];

// The name list (contracts/event-types.ts) and the catalog name exactly the same types: the
// `satisfies` above refuses a missing or an extra entry, this refuses a stray key type.
type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameNames: Equal<keyof typeof EVENT_CATALOG, EventType> = true;
void sameNames;
