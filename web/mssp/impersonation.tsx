import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, useSyncExternalStore } from 'react';
import { Link } from 'react-router-dom';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { NetworkError } from '../shared/api.ts';
import { msspKeys } from './query-keys.ts';

/**
 * "View as customer" (spec §5.2, docs/api.md "Impersonation tokens"): the token minted by
 * `POST /api/mssp/impersonate/{tenant_id}` is a bearer token for that tenant's MSSP reads. It
 * lives only in this module's memory (never storage: a reload ends the view) and is sent as
 * `Authorization` by a client of its own, so it never touches the session's cookie or its
 * expiry handling.
 */
export interface Impersonation {
  tenantId: string;
  /** The tenant's slug, for the banner. */
  slug: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  /** The typed SDK carrying the token. */
  client: SvcClient;
}

let current: Impersonation | null = null;
let expiry: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<() => void>();

function publish(next: Impersonation | null): void {
  current = next;
  clearTimeout(expiry);
  // The server refuses the token from exp on; forgetting it then keeps any read from a 401.
  if (next) expiry = setTimeout(() => publish(null), Math.max(0, next.expiresAt - Date.now()));
  for (const listener of listeners) listener();
}

/**
 * A 401 to the token means it ended (expired, or its user was changed): the view ends, the
 * session does not, so this client must not reach the session's 401 → /login handling.
 */
async function tokenFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(input, { ...init, credentials: 'omit' });
  } catch (error) {
    throw new NetworkError(error);
  }
  if (res.status === 401) publish(null);
  return res;
}

export function startImpersonation(minted: {
  token: string;
  tenant_id: string;
  expires_at: string;
  slug: string;
}): void {
  publish({
    tenantId: minted.tenant_id,
    slug: minted.slug,
    expiresAt: Date.parse(minted.expires_at),
    client: createSvcClient({
      baseUrl: '',
      cookies: false,
      headers: { authorization: `Bearer ${minted.token}` },
      fetch: tokenFetch,
    }),
  });
}

/** Tokens are stateless (docs/tokens.md): ending the view forgets the token; it cannot be revoked. */
export function endImpersonation(): void {
  publish(null);
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function useImpersonation(): Impersonation | null {
  return useSyncExternalStore(subscribe, () => current);
}

/** Seconds left, updated every second while mounted. */
function useSecondsLeft(until: number | undefined): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (until === undefined) return;
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(tick);
  }, [until]);
  return until === undefined ? 0 : Math.max(0, Math.ceil((until - now) / 1000));
}

export function formatCountdown(seconds: number): string {
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  return `${m}:${String(s).padStart(2, '0')}`;
}

/**
 * The banner on every console page while a view as customer is open: which tenant, and the
 * time the token has left. Not a live region: a per-second countdown read aloud would drown
 * everything else; the label carries the minutes for whoever reaches it.
 */
export function ImpersonationBanner() {
  const view = useImpersonation();
  const seconds = useSecondsLeft(view?.expiresAt);
  const queries = useQueryClient();
  if (!view) return null;
  const end = () => {
    queries.removeQueries({ queryKey: msspKeys.viewAs(view.tenantId) });
    endImpersonation();
  };
  return (
    <section className="impersonation-banner" aria-label="Viewing as customer">
      <span>
        Viewing as customer <strong>{view.slug}</strong>.{' '}
        <span>
          Ends in <time dateTime={`PT${seconds}S`}>{formatCountdown(seconds)}</time>.
        </span>
      </span>
      <span className="impersonation-actions">
        <Link to={`/view-as/${view.tenantId}`}>Open the view</Link>
        <button type="button" onClick={end}>
          End view
        </button>
      </span>
    </section>
  );
}
