import Type, { type Static } from 'typebox';
import { PublicBranding } from './public.ts';
import { Problem, route, Uuid } from './route.ts';
import { Timestamp } from './timestamp.ts';

/**
 * The roles of contracts/roles.ts as a schema, spelled out because TypeBox infers no union from
 * a mapped list (test/contracts/roles.test.ts keeps the two equal).
 */
export const Role = Type.Union([
  Type.Literal('platform_admin'),
  Type.Literal('mssp_admin'),
  Type.Literal('analyst'),
  Type.Literal('customer_viewer'),
]);
export type Role = Static<typeof Role>;

/** The identity both auth modes produce (spec §5.1); `GET /api/auth/me` returns it. */
export const Identity = Type.Object(
  {
    user_id: Uuid,
    email: Type.String(),
    display_name: Type.Union([Type.String(), Type.Null()]),
    role: Role,
    user_type: Type.Union([Type.Literal('mssp'), Type.Literal('tenant')]),
    tenant_id: Type.Union([Uuid, Type.Null()]),
    auth_mode: Type.Union([Type.Literal('internal'), Type.Literal('proxy')]),
    must_change: Type.Boolean(),
    session_id: Type.Union([Uuid, Type.Null()]),
    groups: Type.Array(Type.String()),
    via: Type.Union([Type.Literal('session'), Type.Literal('proxy'), Type.Literal('token')]),
    current_tenant: Type.Union([Uuid, Type.Null()]),
  },
  { additionalProperties: false },
);

/**
 * A password that is already set: any length up to a generous transport bound, so that a
 * password set before the 12-character policy (spec §5.4 item 2) still signs in.
 */
const PasswordField = Type.String({ minLength: 1, maxLength: 4096 });

/** A password being chosen: spec §5.4 item 2, counted in Unicode code points as JSON Schema does. */
const NewPassword = Type.String({
  minLength: 12,
  maxLength: 1024,
  // No control characters (C0, DEL, C1): nothing a person types, and a piped line break would
  // make a password that cannot be typed again. The one rule of the password policy
  // (src/auth/password-policy.ts) a schema can state, so the document says it too.
  pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]*$',
  description:
    '12 to 1,024 Unicode code points, no control characters; no composition rules (spec §5.4). Blank and commonly used passwords are refused with 400 password_too_weak',
});

export const LoginBody = Type.Object(
  { email: Type.String({ minLength: 3, maxLength: 254 }), password: PasswordField },
  { additionalProperties: false },
);

export const ChangePasswordBody = Type.Object(
  { current_password: PasswordField, new_password: NewPassword },
  { additionalProperties: false },
);

/**
 * A host as a browser sends it: a DNS name or IPv4 address (labels of 1–63 letters, digits or
 * hyphens), or a bracketed IPv6 address, with an optional port.
 */
const HostQuery = Type.String({
  minLength: 1,
  maxLength: 260,
  pattern:
    '^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\.?|\\[[0-9A-Fa-f:.]{2,45}\\])(:[0-9]{1,5})?$',
});

export const authContract = {
  branding: route({
    method: 'GET',
    path: '/api/auth/branding',
    summary:
      "The branding the sign-in page of `host` shows (a customer host: its tenant's; any other host: the install's); the same answer as GET /api/public/branding from that host",
    access: 'anonymous (internal mode)',
    anonymous: true,
    query: Type.Object({ host: HostQuery }, { additionalProperties: false }),
    responses: { 200: PublicBranding, 400: Problem },
  }),
  login: route({
    method: 'POST',
    path: '/api/auth/login',
    summary: 'Sign in with email and password; sets the svc_session cookie',
    access: 'anonymous (internal mode)',
    anonymous: true,
    body: LoginBody,
    responses: {
      200: Type.Object(
        {
          identity: Identity,
          must_change: Type.Boolean(),
          next: Type.Union([Type.Literal('/account/password'), Type.Null()]),
          session: Type.Object({ absolute_expiry: Timestamp, idle_expiry: Timestamp }),
        },
        { additionalProperties: false },
      ),
      401: Problem,
      /** `tenant_suspended`: right password, but the customer's tenant is suspended. */
      403: Problem,
      423: Problem,
      429: Problem,
      503: Problem,
    },
  }),
  logout: route({
    method: 'POST',
    path: '/api/auth/logout',
    summary: 'Revoke the current session only',
    access: 'session',
    responses: { 204: null, 401: Problem },
  }),
  me: route({
    method: 'GET',
    path: '/api/auth/me',
    summary: 'The current identity',
    access: 'session',
    responses: {
      200: Type.Object({ identity: Identity }, { additionalProperties: false }),
      401: Problem,
    },
  }),
  changePassword: route({
    method: 'POST',
    path: '/api/auth/password/change',
    summary: "Change one's own password; revokes every other session",
    access: 'session (also while must_change is set)',
    body: ChangePasswordBody,
    responses: {
      200: Type.Object(
        { must_change: Type.Literal(false), revoked_sessions: Type.Integer({ minimum: 0 }) },
        { additionalProperties: false },
      ),
      400: Problem,
      401: Problem,
      403: Problem,
      // The new password is hashed: the same per-address share and hash bound as sign-in.
      429: Problem,
      503: Problem,
    },
  }),
} as const;
