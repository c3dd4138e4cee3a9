/**
 * The recording side of svc's Prometheus metrics: what the parts that do work report, as
 * method calls. Parts take only the methods they use (`Pick<Metrics, 'lockout'>`) and default
 * to NO_METRICS, so tests and benchmarks that do not care build them without a registry.
 * Every label passed here must come from a bounded set (a route template, a step name, a task
 * identifier, a tenant id), never a raw path, a user id or an email.
 */
export interface Metrics {
  /** One answered HTTP request; `route` is the matched template or `unmatched`. */
  httpRequest(request: { route: string; method: string; status: number; seconds: number }): void;
  /** One sign-in attempt that reached the login service, by outcome. */
  signIn(outcome: SignInOutcome): void;
  /** An account became locked (the tenth failure in the window), not every refused attempt. */
  lockout(): void;
  /** One request refused by a rate limiter. */
  rateLimited(limiter: RateLimiterName): void;
  /** One provisioning step run by the orchestrator, with how long it took. */
  provisioningStep(step: string, outcome: 'success' | 'failure', seconds: number): void;
  /** One request the orchestrator sent to the Kubernetes API server (src/cluster/kube-requests.ts). */
  kubeRequest(verb: string, resource: string): void;
  /** One job attempt finished; `error` means it will be retried or has failed for good. */
  jobRun(task: string, outcome: 'success' | 'error', seconds: number): void;
  /** A job used its last attempt and stays failed in the queue. */
  jobFailed(task: string): void;
  /** Alerts of an adapter's batch: stored, already stored, or refused with the batch. */
  alerts(outcome: 'accepted' | 'duplicate' | 'refused', count: number): void;
  /** Sessions the retention purge deleted (ended before the audit retention's cutoff). */
  sessionsPurged(count: number): void;
  /** One committed projector fold: each folded event's delay from its append, seconds. */
  projectionFolded(delaysSeconds: readonly number[]): void;
  /** What one LLM call used, charged to its tenant; `cost` in USD, as SVC_LLM_PRICES prices it. */
  llmUsage(
    tenantId: string,
    usage: { inputTokens: number; outputTokens: number; cost: number },
  ): void;
}

/** `refused`: turned away for a reason other than the password (e.g. a suspended tenant). */
export type SignInOutcome = 'success' | 'must_change' | 'failure' | 'locked' | 'refused' | 'error';

export type RateLimiterName = 'login_ip' | 'login_email' | 'ingest';

export const NO_METRICS: Metrics = {
  httpRequest: () => undefined,
  signIn: () => undefined,
  lockout: () => undefined,
  rateLimited: () => undefined,
  provisioningStep: () => undefined,
  kubeRequest: () => undefined,
  jobRun: () => undefined,
  jobFailed: () => undefined,
  alerts: () => undefined,
  llmUsage: () => undefined,
  sessionsPurged: () => undefined,
  projectionFolded: () => undefined,
};
