import type { Metrics, RateLimiterName, SignInOutcome } from './metrics.ts';

/**
 * Counting decorators for parts that report through their return values: composition wraps
 * them, so the parts themselves stay unaware of metrics. Each returns the same shape it takes.
 */

type LoginResultShape = { kind: string; identity?: { must_change: boolean } };

/** Every sign-in the service answers (or fails to answer), by outcome. */
export function countingSignIns<S extends { login(input: never): Promise<LoginResultShape> }>(
  service: S,
  metrics: Pick<Metrics, 'signIn'>,
): S {
  const login = async (input: Parameters<S['login']>[0]) => {
    try {
      const result = await service.login(input);
      metrics.signIn(signInOutcome(result));
      return result;
    } catch (error) {
      metrics.signIn('error');
      throw error;
    }
  };
  return { ...service, login } as S;
}

function signInOutcome(result: LoginResultShape): SignInOutcome {
  if (result.kind === 'ok') return result.identity?.must_change ? 'must_change' : 'success';
  if (result.kind === 'invalid') return 'failure';
  if (result.kind === 'locked') return 'locked';
  return 'refused';
}

/** The sign-in limiters (src/auth/rate-limit.ts): a refused hit is one rejected request. */
export function countingRefusals<L extends { hit(key: string): { allowed: boolean } }>(
  limiter: L,
  name: RateLimiterName,
  metrics: Pick<Metrics, 'rateLimited'>,
): L {
  const hit = (key: string) => {
    const decision = limiter.hit(key);
    if (!decision.allowed) metrics.rateLimited(name);
    return decision;
  };
  return { ...limiter, hit } as L;
}

/** The ingest buckets (src/domains/ingest/rate-limit.ts): a refused take is one batch. */
export function countingTakes<L extends { take(tenantId: string, count: number): { ok: boolean } }>(
  limiter: L,
  name: RateLimiterName,
  metrics: Pick<Metrics, 'rateLimited'>,
): L {
  const take = (tenantId: string, count: number) => {
    const taken = limiter.take(tenantId, count);
    if (!taken.ok) metrics.rateLimited(name);
    return taken;
  };
  return { ...limiter, take } as L;
}

/**
 * The adapter's batches (src/domains/ingest/ingest-service.ts): stored and duplicate alerts
 * from the outcome; a batch refused for any reason (invalid, rate-limited, tenant gone or
 * suspended, database down) refuses all of its alerts, since nothing of it was written.
 */
export function countingIngest<
  S extends {
    ingest(
      tenantId: string,
      batch: { alerts: readonly unknown[] },
    ): Promise<{ accepted: number; duplicates: number }>;
  },
>(service: S, metrics: Pick<Metrics, 'alerts'>): S {
  const ingest = async (tenantId: string, batch: Parameters<S['ingest']>[1]) => {
    try {
      const outcome = await service.ingest(tenantId, batch);
      metrics.alerts('accepted', outcome.accepted);
      metrics.alerts('duplicate', outcome.duplicates);
      return outcome;
    } catch (error) {
      metrics.alerts('refused', batch.alerts.length);
      throw error;
    }
  };
  return { ...service, ingest } as S;
}

/** The retention purge (src/domains/audit/audit-retention.ts): the sessions each run deleted. */
export function countingPurges<
  R extends { purge(trigger: never): Promise<{ sessionsDeleted: number }> },
>(retention: R, metrics: Pick<Metrics, 'sessionsPurged'>): R {
  const purge = async (trigger: Parameters<R['purge']>[0]) => {
    const run = await retention.purge(trigger);
    metrics.sessionsPurged(run.sessionsDeleted);
    return run;
  };
  return { ...retention, purge } as R;
}
