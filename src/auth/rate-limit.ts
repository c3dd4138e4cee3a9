export const RATE_WINDOW_MS = 15 * 60 * 1000;

export interface RateDecision {
  allowed: boolean;
  /** Seconds until the window that refused this attempt ends. */
  retryAfter: number;
}

/**
 * Fixed 15-minute windows counted in process memory (spec §5.5: in-process, before any
 * database lookup). Every attempt counts, successful or not.
 */
export function createRateLimiter(limit: number, now: () => number, windowMs = RATE_WINDOW_MS) {
  const windows = new Map<string, { start: number; count: number }>();

  function prune(at: number) {
    for (const [key, w] of windows) if (at - w.start >= windowMs) windows.delete(key);
  }

  return {
    hit(key: string): RateDecision {
      const at = now();
      if (windows.size > 100_000) prune(at);
      let w = windows.get(key);
      if (!w || at - w.start >= windowMs) {
        w = { start: at, count: 0 };
        windows.set(key, w);
      }
      w.count++;
      return {
        allowed: w.count <= limit,
        retryAfter: Math.max(1, Math.ceil((w.start + windowMs - at) / 1000)),
      };
    },
  };
}
