import { type QueryKey, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { EVENT_TYPES, type EventType } from '../../contracts/event-types.ts';
import { contract, fillPath } from '../../contracts/index.ts';

/**
 * The event types a tenant's stream carries: every name of the event catalog
 * (contracts/event-types.ts; docs/events.md "Catalog"), so a type a writer starts appending
 * reaches open pages without an edit here. The stream names each event by its type, and
 * EventSource has no wildcard listener, so the hook listens to these by name. Only the names
 * are imported: the payload schemas (contracts/events.ts) stay out of the bundle.
 */
export const TENANT_EVENT_TYPES: readonly EventType[] = EVENT_TYPES;

/** The customer's own stream (portal). */
export const OWN_TENANT_EVENTS = contract.tenant.events.path;

/** One tenant's stream, for MSSP staff (console). */
export function tenantEventsUrl(tenantId: string): string {
  return fillPath(contract.mssp.tenantEvents.path, { tenant_id: tenantId });
}

/**
 * Live updates: while mounted, every event of the stream at `url` marks the queries under
 * `keys` stale, so what is on screen is refetched (in one batch per burst of events). The
 * stream ends with `revoked` or `expired` when the session does; then it is closed rather than
 * reopened (the next API call takes the reader to /login).
 */
export function useTenantEvents(
  url: string | undefined,
  keys: readonly QueryKey[],
  types: readonly EventType[] = TENANT_EVENT_TYPES,
): void {
  const queries = useQueryClient();
  const current = useRef({ keys, types });
  current.current = { keys, types };
  useEffect(() => {
    if (!url) return;
    const source = new EventSource(url);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const refresh = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        for (const queryKey of current.current.keys) void queries.invalidateQueries({ queryKey });
      }, 250);
    };
    const stop = () => source.close();
    for (const type of current.current.types) source.addEventListener(type, refresh);
    source.addEventListener('revoked', stop);
    source.addEventListener('expired', stop);
    return () => {
      clearTimeout(timer);
      source.close();
    };
  }, [url, queries]);
}
