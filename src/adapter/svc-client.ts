import { createFamilyClient, createTransport, type FamilyClient } from '../../contracts/client.ts';
import { internalContract } from '../../contracts/internal.ts';

export type InternalClient = FamilyClient<typeof internalContract>;

/** No call to svc may hang the loops: a stalled connection counts as svc being unreachable. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The typed SDK of the `/api/internal/*` family, as every other client of svc uses it. */
export function createInternalClient(apiUrl: string): InternalClient {
  const timedFetch: typeof fetch = (input, init) =>
    fetch(input, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  return createFamilyClient(
    internalContract,
    createTransport({ baseUrl: apiUrl, cookies: false, fetch: timedFetch }),
  );
}
