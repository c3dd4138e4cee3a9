import Type, { type Static, type StaticDecode } from 'typebox';
import { Severity } from '../investigation-values.ts';
import { MSSP_OPERATORS } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { msspRoute } from './route.ts';

/**
 * Outbound webhooks (docs/notifications.md): for the whole install or for one tenant, signed as
 * the Standard Webhooks specification describes, each subscribed to some notifications.
 */

/** What a webhook may subscribe to; each names one condition of one tenant. */
export const NotificationType = Type.Union([
  Type.Literal('review.waiting'),
  Type.Literal('provisioning.failed'),
  Type.Literal('drift.detected'),
  Type.Literal('adapter.silent'),
  Type.Literal('llm.budget_exhausted'),
  Type.Literal('incident.severity'),
]);
export type NotificationType = Static<typeof NotificationType>;

/** `standard`: the JSON notification; `slack`: a Slack incoming-webhook body ({text, blocks}). */
export const WebhookFormat = Type.Union([Type.Literal('standard'), Type.Literal('slack')]);

export const WebhookThresholds = Type.Object(
  {
    /** review.waiting: a review undecided for longer than this. */
    review_wait_minutes: Type.Integer({ minimum: 1, maximum: 10080 }),
    /** incident.severity: an incident opened at, or raised to, this severity or above. */
    min_severity: Severity,
    /** adapter.silent: no heartbeat from the tenant's adapter for longer than this. */
    adapter_silent_minutes: Type.Integer({ minimum: 1, maximum: 10080 }),
  },
  { additionalProperties: false },
);

const Name = Type.String({ minLength: 1, maxLength: 100 });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Events = Type.Array(NotificationType, { minItems: 1, maxItems: 6, uniqueItems: true });

export const WebhookCreate = Type.Object(
  {
    name: Name,
    /** Checked by the outbound guard, as integration URLs are (docs/notifications.md). */
    url: Url,
    format: Type.Optional(WebhookFormat),
    events: Events,
    /** Absent keys take the defaults: 30 minutes, high, 15 minutes. */
    thresholds: Type.Optional(Type.Partial(WebhookThresholds)),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type WebhookCreate = Static<typeof WebhookCreate>;

export const WebhookUpdate = Type.Object(
  {
    name: Type.Optional(Name),
    url: Type.Optional(Url),
    format: Type.Optional(WebhookFormat),
    events: Type.Optional(Events),
    thresholds: Type.Optional(Type.Partial(WebhookThresholds)),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type WebhookUpdate = Static<typeof WebhookUpdate>;

/** Where the signing secret is kept: a key of a Secret in the install namespace. */
export const SecretReference = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    key: Type.String(),
    version: Type.Integer({ minimum: 1 }),
  },
  { additionalProperties: false },
);

export const Webhook = Type.Object(
  {
    id: Uuid,
    /** null for an install webhook. */
    tenant_id: Type.Union([Uuid, Type.Null()]),
    name: Type.String(),
    url: Type.String(),
    format: WebhookFormat,
    events: Type.Array(NotificationType),
    thresholds: WebhookThresholds,
    enabled: Type.Boolean(),
    signing_secret_ref: SecretReference,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);
/** As a handler answers it (timestamps as Dates; the wire has their text). */
export type Webhook = StaticDecode<typeof Webhook>;

/** The create answer: the only time the signing secret is shown (`whsec_…`). */
export const CreatedWebhook = Type.Object(
  { webhook: Webhook, signing_secret: Type.String({ pattern: '^whsec_[A-Za-z0-9+/]+=*$' }) },
  { additionalProperties: false },
);

/** One attempt to deliver one notification, as the delivery log shows it. */
export const WebhookAttempt = Type.Object(
  {
    /** The `webhook-id` header: the same on every attempt of one notification. */
    delivery_id: Uuid,
    event_type: Type.String(),
    attempt: Type.Integer({ minimum: 1 }),
    attempted_at: Timestamp,
    /** The receiver's HTTP status; null when no answer came (refused, timed out). */
    status_code: Type.Union([Type.Integer(), Type.Null()]),
    /** The first 200 characters of the answer. */
    response_excerpt: Type.Union([Type.String(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()]),
    duration_ms: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type WebhookAttempt = StaticDecode<typeof WebhookAttempt>;

export const WebhookTestResult = Type.Object(
  { delivered: Type.Boolean(), attempt: WebhookAttempt },
  { additionalProperties: false },
);

const WebhookParams = Type.Object({ webhook_id: Uuid }, { additionalProperties: false });
const TenantWebhookParams = Type.Object(
  { tenant_id: Uuid, webhook_id: Uuid },
  { additionalProperties: false },
);
const TenantOnly = Type.Object({ tenant_id: Uuid }, { additionalProperties: false });
const List = Type.Object({ items: Type.Array(Webhook) }, { additionalProperties: false });
const Log = Type.Object({ items: Type.Array(WebhookAttempt) }, { additionalProperties: false });

const INSTALL = '/api/mssp/webhooks';
const TENANT = '/api/mssp/tenants/{tenant_id}/webhooks';

export const msspNotificationsContract = {
  listInstallWebhooks: msspRoute('deny', {
    method: 'GET',
    path: INSTALL,
    summary: "The install's webhooks: notifications of every tenant",
    roles: MSSP_OPERATORS,
    responses: { 200: List },
  }),
  createInstallWebhook: msspRoute('deny', {
    method: 'POST',
    path: INSTALL,
    summary: 'Add an install webhook; answers its signing secret once (audited webhook.create)',
    roles: MSSP_OPERATORS,
    body: WebhookCreate,
    responses: { 201: CreatedWebhook, 400: Problem, 403: Problem, 422: Problem, 503: Problem },
  }),
  getInstallWebhook: msspRoute('deny', {
    method: 'GET',
    path: `${INSTALL}/{webhook_id}`,
    summary: 'One install webhook',
    roles: MSSP_OPERATORS,
    params: WebhookParams,
    responses: { 200: Webhook, 404: Problem },
  }),
  updateInstallWebhook: msspRoute('deny', {
    method: 'PATCH',
    path: `${INSTALL}/{webhook_id}`,
    summary: 'Change an install webhook (keys not sent keep their value; audited webhook.update)',
    roles: MSSP_OPERATORS,
    params: WebhookParams,
    body: WebhookUpdate,
    responses: { 200: Webhook, 400: Problem, 404: Problem, 422: Problem },
  }),
  deleteInstallWebhook: msspRoute('deny', {
    method: 'DELETE',
    path: `${INSTALL}/{webhook_id}`,
    summary: 'Delete an install webhook and its signing secret (audited webhook.delete)',
    roles: MSSP_OPERATORS,
    params: WebhookParams,
    responses: { 204: null, 404: Problem },
  }),
  installWebhookDeliveries: msspRoute('deny', {
    method: 'GET',
    path: `${INSTALL}/{webhook_id}/deliveries`,
    summary: "An install webhook's last delivery attempts, newest first",
    roles: MSSP_OPERATORS,
    params: WebhookParams,
    responses: { 200: Log, 404: Problem },
  }),
  testInstallWebhook: msspRoute('deny', {
    method: 'POST',
    path: `${INSTALL}/{webhook_id}:test`,
    summary: 'Send a signed test notification now and answer what came back (audited)',
    roles: MSSP_OPERATORS,
    params: WebhookParams,
    responses: { 200: WebhookTestResult, 404: Problem, 503: Problem },
  }),
  listTenantWebhooks: msspRoute('own_tenant', {
    method: 'GET',
    path: TENANT,
    summary: "A tenant's webhooks: that tenant's notifications only",
    roles: MSSP_OPERATORS,
    params: TenantOnly,
    responses: { 200: List, 404: Problem },
  }),
  createTenantWebhook: msspRoute('own_tenant', {
    method: 'POST',
    path: TENANT,
    summary: 'Add a tenant webhook; answers its signing secret once (audited webhook.create)',
    roles: MSSP_OPERATORS,
    params: TenantOnly,
    body: WebhookCreate,
    responses: {
      201: CreatedWebhook,
      400: Problem,
      403: Problem,
      404: Problem,
      422: Problem,
      503: Problem,
    },
  }),
  getTenantWebhook: msspRoute('own_tenant', {
    method: 'GET',
    path: `${TENANT}/{webhook_id}`,
    summary: 'One tenant webhook',
    roles: MSSP_OPERATORS,
    params: TenantWebhookParams,
    responses: { 200: Webhook, 404: Problem },
  }),
  updateTenantWebhook: msspRoute('own_tenant', {
    method: 'PATCH',
    path: `${TENANT}/{webhook_id}`,
    summary: 'Change a tenant webhook (keys not sent keep their value; audited webhook.update)',
    roles: MSSP_OPERATORS,
    params: TenantWebhookParams,
    body: WebhookUpdate,
    responses: { 200: Webhook, 400: Problem, 404: Problem, 422: Problem },
  }),
  deleteTenantWebhook: msspRoute('own_tenant', {
    method: 'DELETE',
    path: `${TENANT}/{webhook_id}`,
    summary: 'Delete a tenant webhook and its signing secret (audited webhook.delete)',
    roles: MSSP_OPERATORS,
    params: TenantWebhookParams,
    responses: { 204: null, 404: Problem },
  }),
  tenantWebhookDeliveries: msspRoute('own_tenant', {
    method: 'GET',
    path: `${TENANT}/{webhook_id}/deliveries`,
    summary: "A tenant webhook's last delivery attempts, newest first",
    roles: MSSP_OPERATORS,
    params: TenantWebhookParams,
    responses: { 200: Log, 404: Problem },
  }),
  testTenantWebhook: msspRoute('own_tenant', {
    method: 'POST',
    path: `${TENANT}/{webhook_id}:test`,
    summary: 'Send a signed test notification now and answer what came back (audited)',
    roles: MSSP_OPERATORS,
    params: TenantWebhookParams,
    responses: { 200: WebhookTestResult, 404: Problem, 503: Problem },
  }),
} as const;
