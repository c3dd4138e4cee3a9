import { isUuid } from '../../../contracts/uuid.ts';
import { parseEventId } from './event-repository.ts';

/** A NOTIFY on the events channel: tenant T has a new event with this id. */
export interface Notice {
  tenantId: string;
  id: bigint;
}

/**
 * Notifications are hints, not data: any role that can connect may NOTIFY this channel. The
 * payload only says which tenant to look at; what is delivered is read from the table under
 * that tenant's RLS context, so a forged notice can at worst cause a harmless read.
 */
export function parseNotice(payload: string | undefined): Notice | undefined {
  const value = noticeObject(payload);
  if (value === undefined) return undefined;
  const { tenant_id: tenantId, id } = value as Record<string, unknown>;
  if (!isUuid(tenantId) || typeof id !== 'string') return undefined;
  const parsed = parseEventId(id);
  return parsed === undefined ? undefined : { tenantId: tenantId.toLowerCase(), id: parsed };
}

/** A notice's payload as a JSON object, or undefined (absent, over 200 characters, not one). */
function noticeObject(payload: string | undefined): object | undefined {
  if (payload === undefined || payload.length > 200) return undefined;
  try {
    const value: unknown = JSON.parse(payload);
    return typeof value === 'object' && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A NOTIFY on the revocation channel (sql/0027): something about this session, user or
 * tenant changed that may end credentials. A hint like the events notice, and for the same
 * reason: the listener pauses the matching streams and re-reads their credentials, so a forged
 * notice costs one re-check and ends nothing by itself.
 */
export interface RevocationNotice {
  kind: 'session' | 'user' | 'tenant';
  id: string;
}

const REVOCATION_KINDS = ['session', 'user', 'tenant'] as const;

export function parseRevocation(payload: string | undefined): RevocationNotice | undefined {
  const value = noticeObject(payload);
  if (value === undefined) return undefined;
  const entries = Object.entries(value);
  if (entries.length !== 1) return undefined;
  const [kind, id] = entries[0] as [string, unknown];
  const known = REVOCATION_KINDS.find((k) => k === kind);
  return known && isUuid(id) ? { kind: known, id: id.toLowerCase() } : undefined;
}
