/**
 * The name of every event type svc appends to the event store (docs/events.md "Catalog"), and
 * nothing else: the web app imports this list to subscribe to a tenant's stream by name
 * (EventSource has no wildcard listener), so it stays free of the payload schemas, which live
 * in contracts/events.ts and must name exactly these types (a type-level check there).
 */
export const EVENT_TYPES = [
  // Ingest (docs/ingest.md): an alert's own stream, and the investigation it opens.
  'alert.received',
  'investigation.opened',
  // The triage pipeline (docs/pipeline.md), on the investigation's stream.
  'triage.started',
  'triage.completed',
  'triage.failed',
  'analyzer.completed',
  'enrichment.completed',
  'decision.made',
  'review.requested',
  'review.approved',
  'review.rejected',
  'investigation.closed',
  'case.opened',
  'action.failed',
  // An analyst's work on an investigation (docs/investigations.md), on its stream.
  'investigation.assigned',
  'note.added',
  'investigation.reopened',
  'investigation.severity_changed',
  // A tenant's lifecycle rows, copied to its stream by a trigger (sql/0010, sql/0013).
  'tenant.lifecycle.transition',
  'tenant.lifecycle.step',
  'tenant.lifecycle.config_revision',
  'tenant.lifecycle.error',
  'tenant.lifecycle.drift',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

const KNOWN: ReadonlySet<string> = new Set(EVENT_TYPES);

/** A stored event's type is a string; this says whether the catalog knows it. */
export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && KNOWN.has(value);
}
