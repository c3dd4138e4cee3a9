/**
 * The per-tenant ingest limit: a token bucket over alerts, in this process's memory. Each
 * tenant's bucket holds up to `burst` tokens and refills at `rate` tokens per second; a batch
 * of n alerts takes n tokens or is refused whole (nothing is written), with the wait after
 * which it would fit. Several API replicas each keep their own buckets, so the install-wide
 * ceiling is the per-replica limit times the replicas the adapter's requests spread over.
 */
export interface IngestLimit {
  /** Tokens (alerts) added per second. */
  rate: number;
  /** Bucket size: the most alerts a tenant may send at once after a quiet spell. */
  burst: number;
}

export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

export interface IngestRateLimiter {
  /** Takes `count` tokens from the tenant's bucket, or refuses and says how long to wait. */
  take(tenantId: string, count: number): TakeResult;
  /** Gives back tokens taken for a batch that was then not stored (a failure, a gone tenant). */
  refund(tenantId: string, count: number): void;
  /** Tenants with a bucket that is not full (a full one is the same as none). */
  size(): number;
}

interface Bucket {
  tokens: number;
  /** Clock reading (ms) the tokens were counted at. */
  at: number;
}

/** Buckets kept before full ones are first swept; a full bucket carries no information. */
const SWEEP_AT = 10_000;

export function createIngestRateLimiter(limit: IngestLimit, now: () => number): IngestRateLimiter {
  if (!(limit.rate > 0) || !(limit.burst >= 1)) throw new RangeError('rate and burst must be > 0');
  const buckets = new Map<string, Bucket>();
  let sweepAt = SWEEP_AT;

  /** The bucket brought up to the clock; a clock that stepped back refills nothing. */
  function current(tenantId: string, at: number): Bucket {
    const bucket = buckets.get(tenantId) ?? { tokens: limit.burst, at };
    const elapsed = Math.max(0, at - bucket.at);
    bucket.tokens = Math.min(limit.burst, bucket.tokens + (elapsed * limit.rate) / 1000);
    bucket.at = Math.max(bucket.at, at);
    return bucket;
  }

  /** Amortised O(1): after a sweep the next waits until the map has doubled. */
  function sweep(at: number): void {
    if (buckets.size < sweepAt) return;
    for (const tenantId of buckets.keys()) {
      if (current(tenantId, at).tokens >= limit.burst) buckets.delete(tenantId);
    }
    sweepAt = Math.max(SWEEP_AT, buckets.size * 2);
  }

  return {
    take(tenantId, count) {
      const at = now();
      const bucket = current(tenantId, at);
      if (bucket.tokens >= count) {
        bucket.tokens -= count;
        sweep(at);
        buckets.set(tenantId, bucket);
        return { ok: true };
      }
      // A batch larger than the bucket can never fit; it waits as long as a full refill.
      const missing = Math.min(count, limit.burst) - bucket.tokens;
      const wait = count > limit.burst ? limit.burst / limit.rate : missing / limit.rate;
      buckets.set(tenantId, bucket);
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(wait)) };
    },
    refund(tenantId, count) {
      const bucket = current(tenantId, now());
      bucket.tokens = Math.min(limit.burst, bucket.tokens + count);
      buckets.set(tenantId, bucket);
    },
    size: () => buckets.size,
  };
}
