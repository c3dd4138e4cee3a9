import { setTimeout as sleep } from 'node:timers/promises';

/** The longest wait between two tries of anything (svc, the indexer). */
export const MAX_BACKOFF_MS = 30_000;
const FIRST_BACKOFF_MS = 250;

/**
 * Exponential backoff with jitter: the n-th retry waits between half and all of
 * 250 ms × 2^n, capped at 30 s, so adapters of many tenants that lost svc together do not
 * come back in lockstep.
 */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.min(attempt, 20));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/** Waits, or returns early (false) once the signal is aborted; never throws. */
export async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
