import Type from 'typebox';
import { AdapterStatus } from './adapter-status.ts';
import { TenantState } from './mssp.ts';
import { Problem, route, Uuid } from './route.ts';
import { Timestamp } from './timestamp.ts';

/**
 * The tenant never comes from the request in this family: it is the token's `tenant_id`
 * (spec §4.4). Every query is therefore closed and empty, so a `?tenant_id=` is refused as an
 * unknown parameter rather than silently ignored.
 */
const NoQuery = Type.Object({}, { additionalProperties: false });

/** What `issueBootstrapCredential` hands out: 32 random bytes, base64url without padding. */
export const BootstrapCredential = Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' });

export const BootstrapBody = Type.Object(
  { tenant_id: Uuid, credential: BootstrapCredential },
  { additionalProperties: false },
);

export const HeartbeatBody = Type.Object(
  {
    version: Type.String({ pattern: '^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$' }),
    status: Type.Optional(AdapterStatus),
  },
  { additionalProperties: false },
);

/** Where the adapter finds an integration's credential: a reference, never the value. */
export const SecretReference = Type.Object(
  { namespace: Type.String(), name: Type.String(), version: Type.Integer({ minimum: 1 }) },
  { additionalProperties: false },
);

export const AdapterIntegration = Type.Object(
  {
    id: Uuid,
    kind: Type.String(),
    name: Type.String(),
    endpoint_url: Type.Union([Type.String(), Type.Null()]),
    settings: Type.Record(Type.String(), Type.Unknown()),
    thresholds: Type.Record(Type.String(), Type.Unknown()),
    enabled: Type.Boolean(),
    secret: Type.Union([SecretReference, Type.Null()]),
  },
  { additionalProperties: false },
);

export const AdapterConfig = Type.Object(
  {
    tenant_id: Uuid,
    config_revision: Type.Integer({ minimum: 1 }),
    app_name: Type.Union([Type.String(), Type.Null()]),
    integrations: Type.Array(AdapterIntegration),
  },
  { additionalProperties: false },
);

/** Alerts one ingest request may carry (413 `batch_too_large` above it). */
export const MAX_ALERTS_PER_BATCH = 500;
/** One alert, serialized as JSON (400 `validation_failed` above it). */
export const MAX_ALERT_BYTES = 64 * 1024;
/** The ingest route's body limit; every other route keeps the global 1 MiB (413 `payload_too_large`). */
export const MAX_ALERT_BATCH_BODY_BYTES = 4 * 1024 * 1024;

/**
 * An alert's own timestamp: Wazuh writes `2026-11-26T13:45:01.123+0000` (offset without a
 * colon), RFC 3339 `…+00:00` or `…Z`; both are accepted. Years 1970–9999. A day the calendar
 * does not have (02-30) or an instant outside those years once in UTC is refused by the server
 * with 400, which no pattern can say.
 */
export const ALERT_TIMESTAMP_PATTERN =
  '^(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?([Zz]|[+-]([01][0-9]|2[0-3]):?[0-5][0-9])$';

/**
 * A Wazuh alert as the indexer's `wazuh-alerts-*` indices hold it. svc reads the fields below;
 * every other field (`data`, `full_log`, `decoder`, `manager`, `syscheck`, …) is kept as sent.
 */
export const WazuhAlert = Type.Object(
  {
    /** The alert's source id, unique per manager: ingest stores each one once per tenant. */
    id: Type.String({ minLength: 1, maxLength: 128 }),
    timestamp: Type.String({ pattern: ALERT_TIMESTAMP_PATTERN }),
    rule: Type.Object(
      {
        id: Type.String({ minLength: 1, maxLength: 64 }),
        level: Type.Integer({ minimum: 0, maximum: 16 }),
        description: Type.String({ maxLength: 1000 }),
        groups: Type.Optional(Type.Array(Type.String())),
      },
      { additionalProperties: true },
    ),
    agent: Type.Object(
      {
        id: Type.String({ minLength: 1, maxLength: 64 }),
        name: Type.Optional(Type.String()),
        ip: Type.Optional(Type.String()),
      },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
);

const SearchAfter = Type.Array(Type.Union([Type.Number(), Type.String({ maxLength: 1024 })]), {
  minItems: 1,
  maxItems: 8,
});

/**
 * Where the adapter stands in the indexer, opaque to svc: the `search_after` of its last alert
 * and what it needs to find late alerts after a restart (docs/adapter.md "Late alerts"). Every
 * field but `search_after` is optional, so a checkpoint stored before them still resumes. The
 * size is bounded: `window.counts` holds one number per bucket of the lateness window.
 */
export const IngestCheckpoint = Type.Object(
  {
    search_after: SearchAfter,
    index: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    /**
     * `ingest_time`: `search_after` is on the indexer's ingest stamp (`svc_ingested_at`, `id`).
     * Absent: on the alert's `timestamp` and `id`, as adapters before the stamp wrote it.
     */
    order: Type.Optional(Type.Literal('ingest_time')),
    /** The alert-time cursor over documents without an ingest stamp. */
    unstamped_after: Type.Optional(SearchAfter),
    /** Documents read per bucket of the lateness window (−1: not known). */
    window: Type.Optional(
      Type.Object(
        {
          bucket_ms: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
          start: Type.Integer({ minimum: 0 }),
          counts: Type.Array(Type.Integer({ minimum: -1 }), { maxItems: 128 }),
        },
        { additionalProperties: false },
      ),
    ),
    /** Stamped documents known below the window's start. */
    settled: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Alerts found later than the lateness window, since the first adapter. */
    alerts_late: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);

/** Closed at the top: a `tenant_id` (or anything else) beside `alerts` is refused. */
export const AlertBatchBody = Type.Object(
  {
    alerts: Type.Array(WazuhAlert, { minItems: 1, maxItems: MAX_ALERTS_PER_BATCH }),
    checkpoint: IngestCheckpoint,
  },
  { additionalProperties: false },
);

/** `/api/internal/*` (spec §4.4). */
export const internalContract = {
  bootstrap: route({
    method: 'POST',
    path: '/api/internal/adapter/bootstrap',
    summary: "Exchange the tenant's bootstrap credential for an adapter token",
    access: 'anonymous; authenticated by the bootstrap credential in the body',
    anonymous: true,
    query: NoQuery,
    body: BootstrapBody,
    responses: {
      200: Type.Object(
        { token: Type.String(), expires_at: Timestamp },
        { additionalProperties: false },
      ),
      400: Problem,
      401: Problem,
      /** `tenant_suspended`, to the holder of a valid credential only. */
      403: Problem,
    },
  }),
  health: route({
    method: 'POST',
    path: '/api/internal/adapter/health',
    summary:
      "Adapter heartbeat for the token's tenant; the first one while provisioning activates it",
    access: 'adapter token',
    query: NoQuery,
    body: HeartbeatBody,
    responses: {
      200: Type.Object(
        { tenant_state: TenantState, activated: Type.Boolean() },
        { additionalProperties: false },
      ),
      400: Problem,
      401: Problem,
      403: Problem,
    },
  }),
  config: route({
    method: 'GET',
    path: '/api/internal/adapter/config',
    summary: "The token's tenant's integration configuration (secret references only) and app name",
    access: 'adapter token',
    query: NoQuery,
    responses: {
      200: AdapterConfig,
      400: Problem,
      401: Problem,
      403: Problem,
    },
  }),
  alerts: route({
    method: 'POST',
    path: '/api/internal/adapter/alerts',
    summary:
      "Store a batch of the token's tenant's Wazuh alerts and the adapter's checkpoint, in one transaction (idempotent per alert id)",
    access: 'adapter token',
    query: NoQuery,
    body: AlertBatchBody,
    responses: {
      200: Type.Object(
        {
          /** Alerts new to the store, written by this request. */
          accepted: Type.Integer({ minimum: 0 }),
          /** Alerts already stored, or repeated within the batch: written nothing. */
          duplicates: Type.Integer({ minimum: 0 }),
          checkpoint: IngestCheckpoint,
        },
        { additionalProperties: false },
      ),
      400: Problem,
      401: Problem,
      403: Problem,
      413: Problem,
      429: Problem,
    },
  }),
  checkpoint: route({
    method: 'GET',
    path: '/api/internal/adapter/checkpoint',
    summary:
      "Where the token's tenant's adapter resumes: the checkpoint stored with its last batch",
    access: 'adapter token',
    query: NoQuery,
    responses: {
      200: Type.Object(
        {
          checkpoint: Type.Union([IngestCheckpoint, Type.Null()]),
          alerts_total: Type.Integer({ minimum: 0 }),
        },
        { additionalProperties: false },
      ),
      400: Problem,
      401: Problem,
      403: Problem,
    },
  }),
} as const;
