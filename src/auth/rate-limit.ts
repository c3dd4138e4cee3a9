export const RATE_WINDOW_MS = 15 * 60 * 1000;
/**
 * Keys one limiter holds at most. A key is at most ~260 characters (an email is capped at
 * 254), so a full limiter stays in the tens of MiB.
 */
export const RATE_LIMIT_CAPACITY = 100_000;

export interface RateDecision {
  allowed: boolean;
  /** Seconds until the window that refused this attempt ends. */
  retryAfter: number;
}

export interface RateLimiter {
  hit(key: string): RateDecision;
  /**
   * `examined` counts windows looked at by expiry: each is evicted at most once and at most
   * one live window is looked at per hit, so it grows by evictions + hits, never by size.
   */
  stats(): { keys: number; evicted: number; examined: number };
}

interface Window {
  key: string;
  start: number;
  count: number;
  /** The window opened after this one: the list runs oldest to newest. */
  next: Window | undefined;
}

/**
 * Fixed 15-minute windows counted in process memory (spec §5.5: in-process, before any
 * database lookup).
 *
 * Windows are kept in a list in the order they opened, so the expired ones are always at its
 * head and each hit evicts them there: O(1) amortised, whatever the number of keys. (Not by
 * iterating the Map from its front: V8 leaves deleted entries as holes that every new
 * iterator walks again, which makes that O(deletions since the last rehash) per hit.)
 *
 * At `capacity` live windows a new key is refused, not stored, until the oldest window ends
 * (fail closed). Evicting a live window instead would let anyone with enough fresh keys reset
 * a victim's counter, or their own; refusing costs them `capacity` distinct keys per window
 * and can only delay sign-ins, never admit extra guesses.
 */
export function createRateLimiter(
  limit: number,
  now: () => number,
  { windowMs = RATE_WINDOW_MS, capacity = RATE_LIMIT_CAPACITY } = {},
): RateLimiter {
  const windows = new Map<string, Window>();
  let oldest: Window | undefined;
  let newest: Window | undefined;
  let evicted = 0;
  let examined = 0;

  const secondsLeft = (w: Window, at: number) =>
    Math.max(1, Math.ceil((w.start + windowMs - at) / 1000));

  function evictExpired(at: number) {
    while (oldest) {
      examined++;
      if (at - oldest.start < windowMs) return;
      windows.delete(oldest.key);
      evicted++;
      oldest = oldest.next;
    }
    newest = undefined;
  }

  return {
    hit(key) {
      const at = now();
      evictExpired(at);
      let w = windows.get(key);
      if (w && at - w.start >= windowMs) {
        // Only after the clock stepped back can a window outlive eviction; restarting it in
        // place keeps its list position, which at worst delays evicting the ones behind it.
        w.start = at;
        w.count = 0;
      }
      if (!w) {
        if (oldest && windows.size >= capacity) {
          return { allowed: false, retryAfter: secondsLeft(oldest, at) };
        }
        w = { key, start: at, count: 0, next: undefined };
        windows.set(key, w);
        if (newest) newest.next = w;
        else oldest = w;
        newest = w;
      }
      w.count++;
      return { allowed: w.count <= limit, retryAfter: secondsLeft(w, at) };
    },
    stats: () => ({ keys: windows.size, evicted, examined }),
  };
}
