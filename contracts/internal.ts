import Type from 'typebox';
import { TenantState } from './mssp.ts';
import { Problem, route, Uuid } from './route.ts';

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

/** Flat, bounded component → value map (e.g. `{ "monitor": "ready", "queue_depth": 3 }`). */
export const AdapterStatus = Type.Record(
  Type.String({ pattern: '^[a-z][a-z0-9_.-]{0,63}$' }),
  Type.Union([Type.String({ maxLength: 256 }), Type.Number(), Type.Boolean(), Type.Null()]),
  { maxProperties: 64, additionalProperties: false },
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
        { token: Type.String(), expires_at: Type.String() },
        { additionalProperties: false },
      ),
      400: Problem,
      401: Problem,
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
} as const;
