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
  if (payload === undefined || payload.length > 200) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { tenant_id: tenantId, id } = value as Record<string, unknown>;
  if (!isUuid(tenantId) || typeof id !== 'string') return undefined;
  const parsed = parseEventId(id);
  return parsed === undefined ? undefined : { tenantId: tenantId.toLowerCase(), id: parsed };
}
