import { randomUUID } from 'node:crypto';
import type {
  Webhook,
  WebhookAttempt,
  WebhookCreate,
  WebhookUpdate,
} from '../../../contracts/mssp/notifications.ts';
import type { SecretStore } from '../../cluster/secrets.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { AppTx, TenantTx } from '../../db/tenant-context.ts';
import type { Logger } from '../../log/index.ts';
import {
  checkOutboundUrl,
  type OutboundPolicy,
  OutboundUrlError,
  type Resolve,
  type SafeFetchInit,
  safeFetch,
} from '../../net/outbound-url.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { enqueueJobs } from '../jobs/job-repository.ts';
import { findTenant } from '../tenants/tenant-repository.ts';
import { TenancyUnavailableError, TenantNotFoundError } from '../tenants/tenant-types.ts';
import { renderBody } from './notification-messages.ts';
import {
  adapterSilence,
  budgetExhausted,
  deleteWebhook,
  enabledWebhooks,
  findDelivery,
  findWebhook,
  insertAttempt,
  insertDelivery,
  insertWebhook,
  lifecycleOccurrences,
  listAttempts,
  listWebhooks,
  type Occurrence,
  reviewsWaiting,
  type SweepTenant,
  settleDelivery,
  severeIncidents,
  sweepTenants,
  updateWebhook,
  type WebhookFields,
} from './notification-repository.ts';
import {
  type ActorRef,
  type AttemptResult,
  type Notification,
  type StoredWebhook,
  WebhookNotFoundError,
  type WebhookScope,
  WebhookUrlRefusedError,
} from './notification-types.ts';
import { generateSigningSecret, signedHeaders } from './webhook-signature.ts';

/** The queue's task that delivers one notification (src/workers/jobs/webhook-jobs.ts). */
export const DELIVER_JOB = 'webhook_deliver';

/** The Secret key that holds a webhook's signing secret. */
const SECRET_KEY = 'signing-secret';

export const DEFAULT_THRESHOLDS = {
  review_wait_minutes: 30,
  min_severity: 'high',
  adapter_silent_minutes: 15,
} as const;

/**
 * Retries: the n-th failed attempt waits min(cap, base × 2^(n−1)); after `maxAttempts` the
 * delivery is failed. The defaults span about 4 hours: 30 s, 1 min, 2 min, … capped at 1 h.
 */
export interface RetryPolicy {
  baseMs: number;
  capMs: number;
  maxAttempts: number;
}
export const DEFAULT_RETRY: RetryPolicy = { baseMs: 30_000, capMs: 3_600_000, maxAttempts: 10 };

export interface NotificationServiceDeps {
  db: AppDatabase;
  /** Install-namespace Secrets; absent when svc has no cluster (docs/notifications.md). */
  secrets: SecretStore | undefined;
  /** The integrations' outbound rule: checked when a URL is written and again at send time. */
  policy: OutboundPolicy;
  now: () => Date;
  retry?: RetryPolicy;
  /** One attempt's bound, connection to last byte read. Default 10 s. */
  timeoutMs?: number;
  /** Name resolution at send time; default the system resolver (tests rebind names). */
  resolve?: Resolve;
  logger?: Logger;
}

/** The excerpt of an answer the log keeps, and how much of a body is read at all. */
const EXCERPT_CHARS = 200;
const READ_BYTES = 4096;

export function createNotificationService(deps: NotificationServiceDeps) {
  const { db, now } = deps;
  const retry = deps.retry ?? DEFAULT_RETRY;
  const timeoutMs = deps.timeoutMs ?? 10_000;

  /** Install scope: no tenant context; a tenant's: under its RLS, after checking it exists. */
  function inScope<T>(scope: WebhookScope, fn: (tx: AppTx) => Promise<T>): Promise<T> {
    if (scope.kind === 'install') return db.withoutTenant(fn);
    return db.withTenant(scope.tenantId, async (tx) => {
      if (!(await findTenant(tx, scope.tenantId))) throw new TenantNotFoundError(scope.tenantId);
      return fn(tx);
    });
  }

  function checkUrl(url: string): void {
    try {
      checkOutboundUrl(url, deps.policy);
    } catch (error) {
      if (error instanceof OutboundUrlError) throw new WebhookUrlRefusedError(error.message);
      throw error;
    }
  }

  async function required(tx: AppTx, scope: WebhookScope, id: string): Promise<StoredWebhook> {
    const found = await findWebhook(tx, scope, id);
    if (!found) throw new WebhookNotFoundError(id);
    return found;
  }

  const audit = (
    tx: AppTx,
    scope: WebhookScope,
    actor: ActorRef,
    action: string,
    id: string,
    change: { before?: unknown; after?: unknown; details?: Record<string, unknown> },
  ) =>
    writeAudit(tx, {
      tenantId: scope.kind === 'tenant' ? scope.tenantId : null,
      actorPrincipal: 'User',
      actorId: actor.userId,
      action,
      resourceType: 'webhook',
      resourceId: id,
      actingAs: actor.actingAs,
      ...change,
    });

  async function signingSecret(hook: StoredWebhook): Promise<string> {
    if (!deps.secrets) throw new TenancyUnavailableError('svc has no cluster access configured');
    const data = await deps.secrets.read(hook.signing_secret_name);
    const secret = data?.[hook.signing_secret_key];
    if (!secret) throw new Error(`the Secret ${hook.signing_secret_name} has no signing secret`);
    return secret;
  }

  /** One signed POST; never throws: a refusal, a timeout or a 5xx is a failed attempt. */
  async function send(
    hook: StoredWebhook,
    deliveryId: string,
    notification: Notification,
  ): Promise<AttemptResult> {
    const attemptedAt = now();
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let secret: string;
    try {
      secret = await signingSecret(hook);
    } catch (error) {
      return failed(attemptedAt, elapsed(), `signing secret unavailable: ${messageOf(error)}`);
    }
    const body = renderBody(hook.format as 'standard' | 'slack', notification);
    const init: SafeFetchInit = {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'svc-webhooks',
        // The wall clock, not the injected one: receivers hold the timestamp to their own time.
        ...signedHeaders(secret, deliveryId, new Date(), body),
      },
      body,
      signal: AbortSignal.timeout(timeoutMs),
      // A receiver that redirects is misconfigured; following would send the signed body on.
      maxRedirects: 0,
      ...(deps.resolve ? { resolve: deps.resolve } : {}),
    };
    try {
      const res = await safeFetch(hook.url, init, deps.policy);
      const excerpt = await excerptOf(res);
      const ok = res.status >= 200 && res.status < 300;
      return {
        ok,
        attemptedAt,
        statusCode: res.status,
        excerpt,
        error: ok ? null : `the receiver answered ${res.status}`,
        durationMs: elapsed(),
      };
    } catch (error) {
      const why =
        error instanceof OutboundUrlError && error.message === 'too many redirects'
          ? 'the receiver answered a redirect; redirects are not followed'
          : error instanceof OutboundUrlError
            ? `refused by the outbound guard: ${error.message}`
            : (error as Error).name === 'TimeoutError'
              ? `no answer within ${timeoutMs} ms`
              : messageOf(error);
      return failed(attemptedAt, elapsed(), why);
    }
  }

  function viewOf(hook: StoredWebhook): Webhook {
    return {
      id: hook.id,
      tenant_id: hook.tenant_id,
      name: hook.name,
      url: hook.url,
      format: hook.format,
      events: hook.events,
      thresholds: {
        review_wait_minutes: hook.review_wait_minutes,
        min_severity: hook.min_severity as Webhook['thresholds']['min_severity'],
        adapter_silent_minutes: hook.adapter_silent_minutes,
      },
      enabled: hook.enabled,
      signing_secret_ref: {
        namespace: hook.signing_namespace,
        name: hook.signing_secret_name,
        key: hook.signing_secret_key,
        version: hook.signing_version,
      },
      created_at: hook.created_at,
      updated_at: hook.updated_at,
    };
  }

  /** Sweeps one tenant: every enabled webhook's conditions, new ones recorded and queued. */
  async function sweepTenant(tenant: SweepTenant): Promise<number> {
    return db.withTenant(tenant.id, async (tx) => {
      const hooks = await enabledWebhooks(tx);
      let queued = 0;
      for (const hook of hooks) {
        for (const occurrence of await occurrencesFor(tx, hook, now())) {
          const id = await insertDelivery(tx, {
            tenantId: tenant.id,
            scope: hook.tenant_id === null ? 'install' : 'tenant',
            webhookId: hook.id,
            eventType: occurrence.type,
            dedupeKey: occurrence.key,
            payload: {
              type: occurrence.type,
              timestamp: now().toISOString(),
              data: {
                tenant_id: tenant.id,
                tenant_slug: tenant.slug,
                tenant_name: tenant.display_name,
                ...occurrence.data,
              },
            },
          });
          if (id === undefined) continue;
          await enqueueJobs(tx, [
            {
              tenantId: tenant.id,
              jobType: DELIVER_JOB,
              input: { delivery_id: id },
              jobKey: `${DELIVER_JOB}:${id}`,
            },
          ]);
          queued++;
        }
      }
      return queued;
    });
  }

  return {
    list: (scope: WebhookScope) =>
      inScope(scope, async (tx) => (await listWebhooks(tx, scope)).map(viewOf)),

    get: (scope: WebhookScope, id: string) =>
      inScope(scope, async (tx) => viewOf(await required(tx, scope, id))),

    /**
     * Checks the URL, makes the signing secret and its Secret, then the row and its audit in one
     * transaction; a failed insert removes the Secret again. The secret is answered this once.
     */
    async create(
      scope: WebhookScope,
      input: WebhookCreate,
      actor: ActorRef,
    ): Promise<{ webhook: Webhook; signing_secret: string }> {
      checkUrl(input.url);
      const secrets = deps.secrets;
      if (!secrets) throw new TenancyUnavailableError('svc has no cluster access configured');
      const id = randomUUID();
      const secretName = `svc-webhook-${id}`;
      const signingSecret = generateSigningSecret();
      return inScope(scope, async (tx) => {
        await secrets.create(
          secretName,
          { [SECRET_KEY]: signingSecret },
          {
            'svc-webhook': id,
            ...(scope.kind === 'tenant' ? { 'tenant-id': scope.tenantId } : {}),
          },
        );
        try {
          const stored = await insertWebhook(tx, scope, {
            id,
            ...fieldsOf(input),
            signing_namespace: secrets.namespace,
            signing_secret_name: secretName,
            signing_secret_key: SECRET_KEY,
            created_by: `user:${actor.userId}`,
            now: now(),
          });
          const webhook = viewOf(stored);
          await audit(tx, scope, actor, 'webhook.create', id, { after: auditable(webhook) });
          return { webhook, signing_secret: signingSecret };
        } catch (error) {
          await secrets.remove(secretName).catch(() => undefined);
          throw error;
        }
      });
    },

    update: (scope: WebhookScope, id: string, input: WebhookUpdate, actor: ActorRef) => {
      if (input.url !== undefined) checkUrl(input.url);
      return inScope(scope, async (tx) => {
        const before = viewOf(await required(tx, scope, id));
        const next = fieldsOf({
          name: input.name ?? before.name,
          url: input.url ?? before.url,
          format: input.format ?? before.format,
          events: input.events ?? before.events,
          thresholds: { ...before.thresholds, ...input.thresholds },
          enabled: input.enabled ?? before.enabled,
        });
        const stored = await updateWebhook(tx, scope, id, next);
        if (!stored) throw new WebhookNotFoundError(id);
        const after = viewOf(stored);
        await audit(tx, scope, actor, 'webhook.update', id, {
          before: auditable(before),
          after: auditable(after),
        });
        return after;
      });
    },

    /** Deletes the row (its log with it), then its Secret once the row is gone. */
    async remove(scope: WebhookScope, id: string, actor: ActorRef): Promise<void> {
      const gone = await inScope(scope, async (tx) => {
        const stored = await deleteWebhook(tx, scope, id);
        if (!stored) throw new WebhookNotFoundError(id);
        await audit(tx, scope, actor, 'webhook.delete', id, { before: auditable(viewOf(stored)) });
        return stored;
      });
      await deps.secrets?.remove(gone.signing_secret_name).catch((error: unknown) => {
        deps.logger?.warn({ err: error, secret: gone.signing_secret_name }, 'webhook Secret left');
      });
    },

    deliveries: (scope: WebhookScope, id: string): Promise<WebhookAttempt[]> =>
      inScope(scope, async (tx) => {
        await required(tx, scope, id);
        return (await listAttempts(tx, scope, id)).map((a) => ({ ...a }));
      }),

    /** One signed test notification, sent now; its attempt goes to the log like any other. */
    test: (scope: WebhookScope, id: string, actor: ActorRef) =>
      inScope(scope, async (tx) => {
        const hook = await required(tx, scope, id);
        const deliveryId = randomUUID();
        const notification: Notification = {
          type: 'webhook.test',
          timestamp: now().toISOString(),
          data: { webhook_id: id, tenant_id: hook.tenant_id },
        };
        const result = await send(hook, deliveryId, notification);
        await insertAttempt(tx, hook, {
          deliveryId,
          eventType: notification.type,
          number: 1,
          result,
        });
        await audit(tx, scope, actor, 'webhook.test', id, {
          details: { delivery_id: deliveryId, status_code: result.statusCode, ok: result.ok },
        });
        return {
          delivered: result.ok,
          attempt: attemptView(deliveryId, notification.type, 1, result),
        };
      }),

    /**
     * Looks for every notified condition of every tenant and queues one delivery per webhook
     * and occurrence; the unique dedupe key makes a condition found again notify once.
     */
    async sweep(): Promise<{ queued: number }> {
      const tenants = await db.withoutTenant((tx) => sweepTenants(tx));
      let queued = 0;
      for (const tenant of tenants) queued += await sweepTenant(tenant);
      return { queued };
    },

    /**
     * The delivery job: one attempt, recorded in the webhook's log; on failure the next attempt
     * is queued after the backoff, with the same delivery id (`webhook-id`).
     */
    async deliver(tenantId: string, deliveryId: string): Promise<void> {
      const found = await db.withTenant(tenantId, async (tx) => {
        const delivery = await findDelivery(tx, deliveryId);
        if (delivery?.status !== 'pending') return undefined;
        const scope: WebhookScope =
          delivery.scope === 'install' ? { kind: 'install' } : { kind: 'tenant', tenantId };
        return { delivery, hook: await findWebhook(tx, scope, delivery.webhook_id) };
      });
      if (!found) return;
      const { delivery, hook } = found;
      if (!hook?.enabled) {
        // Deleted or disabled since: nobody is listening for it any more.
        await db.withTenant(tenantId, (tx) =>
          settleDelivery(tx, deliveryId, delivery.attempts, {
            status: 'failed',
            nextAttemptAt: null,
            at: now(),
          }),
        );
        return;
      }
      const number = delivery.attempts + 1;
      const result = await send(hook, deliveryId, delivery.payload as unknown as Notification);
      await db.withTenant(tenantId, async (tx) => {
        const last = number >= retry.maxAttempts;
        const wait = Math.min(retry.capMs, retry.baseMs * 2 ** (number - 1));
        const nextAttemptAt = result.ok || last ? null : new Date(now().getTime() + wait);
        const status = result.ok ? 'delivered' : last ? 'failed' : 'pending';
        const settled = await settleDelivery(tx, deliveryId, delivery.attempts, {
          status,
          nextAttemptAt,
          at: now(),
        });
        if (!settled) return;
        await insertAttempt(tx, hook, {
          deliveryId,
          eventType: delivery.event_type,
          number,
          result,
        });
        if (nextAttemptAt)
          await enqueueJobs(tx as TenantTx, [
            {
              tenantId,
              jobType: DELIVER_JOB,
              input: { delivery_id: deliveryId },
              runAt: nextAttemptAt,
            },
          ]);
      });
    },
  };
}

export type NotificationService = ReturnType<typeof createNotificationService>;

async function occurrencesFor(tx: TenantTx, hook: StoredWebhook, at: Date): Promise<Occurrence[]> {
  const found: Occurrence[] = [];
  for (const type of hook.events) {
    if (type === 'review.waiting') found.push(...(await reviewsWaiting(tx, hook, at)));
    if (type === 'provisioning.failed')
      found.push(...(await lifecycleOccurrences(tx, hook, 'error')));
    if (type === 'drift.detected') found.push(...(await lifecycleOccurrences(tx, hook, 'drift')));
    if (type === 'adapter.silent') found.push(...(await adapterSilence(tx, hook, at)));
    if (type === 'llm.budget_exhausted') found.push(...(await budgetExhausted(tx, hook)));
    if (type === 'incident.severity') found.push(...(await severeIncidents(tx, hook)));
  }
  return found;
}

function fieldsOf(input: WebhookCreate): WebhookFields {
  const thresholds = { ...DEFAULT_THRESHOLDS, ...input.thresholds };
  return {
    name: input.name,
    url: input.url,
    format: input.format ?? 'standard',
    events: [...input.events],
    review_wait_minutes: thresholds.review_wait_minutes,
    min_severity: thresholds.min_severity,
    adapter_silent_minutes: thresholds.adapter_silent_minutes,
    enabled: input.enabled ?? true,
  };
}

/** The audit snapshot: dates as text, the Secret's reference as it is (never its value). */
function auditable(webhook: Webhook): Record<string, unknown> {
  const { created_at: _c, updated_at: _u, ...rest } = webhook;
  return rest;
}

function attemptView(
  deliveryId: string,
  eventType: string,
  attempt: number,
  r: AttemptResult,
): WebhookAttempt {
  return {
    delivery_id: deliveryId,
    event_type: eventType,
    attempt,
    attempted_at: r.attemptedAt,
    status_code: r.statusCode,
    response_excerpt: r.excerpt,
    error: r.error,
    duration_ms: r.durationMs,
  };
}

function failed(attemptedAt: Date, durationMs: number, error: string): AttemptResult {
  return {
    ok: false,
    attemptedAt,
    statusCode: null,
    excerpt: null,
    error: error.slice(0, 500),
    durationMs,
  };
}

function messageOf(error: unknown): string {
  const e = error as { message?: string; cause?: { code?: string; message?: string } };
  const cause = e.cause?.code ?? e.cause?.message;
  return `${e.message ?? String(error)}${cause ? ` (${cause})` : ''}`.slice(0, 500);
}

/** The first characters of the answer, reading at most READ_BYTES of it. */
async function excerptOf(res: Response): Promise<string | null> {
  if (!res.body) return null;
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < READ_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  // PostgreSQL text cannot hold U+0000; a receiver's answer may.
  const text = Buffer.concat(chunks)
    .toString('utf8')
    .replaceAll('\u0000', '')
    .slice(0, EXCERPT_CHARS);
  return text === '' ? null : text;
}
