import type { EventPayload, EventType } from '../../../contracts/events.ts';
import type { StoredEvent } from '../events/event-repository.ts';
import { isSeverity, type Severity } from './projection-types.ts';

/**
 * What the folds read from events, each read defensively: a payload is whatever its writer
 * stored, and a fold must skip what it cannot read instead of throwing (projection-types.ts,
 * `Fold`).
 */
export type PayloadObject = Record<string, unknown>;

export function object(value: unknown): PayloadObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as PayloadObject)
    : undefined;
}

/**
 * A stored payload seen through its catalog type (contracts/events.ts): the field names are the
 * catalog's (a renamed or misspelled field is a type error), the values stay unknown, because a
 * row written before a payload changed keeps its old shape and is read defensively all the same.
 */
export type Unread<T> = T extends unknown ? { readonly [K in keyof T]?: unknown } : never;

/** The payload of an event the fold was given for `type` (its projection's `events`). */
export function payloadOf<T extends EventType>(
  event: StoredEvent,
  _type: T,
): Unread<EventPayload<T>> {
  return (object(event.payload) ?? {}) as Unread<EventPayload<T>>;
}

/** A string of 1..max characters (trimmed), or undefined. */
export function text(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed.length >= 1 && trimmed.length <= max ? trimmed : undefined;
}

/** Wazuh writes rule and agent ids as strings; a number is accepted as its decimal form. */
export function identifier(value: unknown, max: number): string | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? String(value) : text(value, max);
}

/** Severity from a Wazuh rule level (docs/projections.md). */
export function severityOfLevel(level: number): Severity {
  if (level <= 3) return 'info';
  if (level <= 6) return 'low';
  if (level <= 9) return 'medium';
  if (level <= 12) return 'high';
  return 'critical';
}

/** An `alert.received`: the payload's severity, else its Wazuh rule level's, else info. */
export function alertSeverity(payload: PayloadObject): Severity {
  if (isSeverity(payload.severity)) return payload.severity;
  const level = object(object(payload.alert)?.rule)?.level;
  return typeof level === 'number' ? severityOfLevel(level) : 'info';
}

/** The later of two ISO timestamps (a missing one loses). */
export function later(a: string | null, b: string): string {
  return a !== null && Date.parse(a) >= Date.parse(b) ? a : b;
}

export function earlier(a: string, b: string): string {
  return Date.parse(a) <= Date.parse(b) ? a : b;
}
