import type * as s from 'zapatos/schema';
import type { NotificationType } from '../../../contracts/mssp/notifications.ts';
import type { Narrowed } from '../../db/rows.ts';
import { DomainError } from '../domain-error.ts';

/** Install webhooks hear every tenant; a tenant webhook, its own tenant only. */
export type WebhookScope = { kind: 'install' } | { kind: 'tenant'; tenantId: string };

/** A webhook row of either table, as the service reads it (the install one has no tenant). */
export type StoredWebhook = Narrowed<
  Omit<s.tenant_webhooks.Selectable, 'tenant_id'>,
  { format: 'standard' | 'slack'; events: NotificationType[] }
> & { tenant_id: string | null };

/** What is sent: the Standard Webhooks envelope `{type, timestamp, data}`. */
export interface Notification {
  type: NotificationType | 'webhook.test';
  timestamp: string;
  data: Record<string, unknown>;
}

/** One try at one receiver, as the delivery log keeps it. */
export interface AttemptResult {
  ok: boolean;
  attemptedAt: Date;
  statusCode: number | null;
  excerpt: string | null;
  error: string | null;
  durationMs: number;
}

export interface ActorRef {
  userId: string;
  /** The impersonated tenant when the caller acts through an impersonation token. */
  actingAs: string | null;
}

/** No such webhook in this scope (another tenant's id reads as missing too). */
export class WebhookNotFoundError extends DomainError {
  readonly code = 'webhook_not_found';
  constructor(readonly webhookId: string) {
    super(`No webhook ${webhookId} here`);
  }
}

/**
 * The URL is one the outbound guard refuses (internal address or name, a scheme other than
 * http(s), credentials in it): the integrations' rule, src/net/outbound-url.ts.
 */
export class WebhookUrlRefusedError extends DomainError {
  readonly code = 'webhook_url_refused';
  constructor(readonly reason: string) {
    super(`The outbound guard refuses this URL: ${reason}`);
  }
}
