import Type, { type Static, type TSchema } from 'typebox';
import type { Role } from './roles.ts';

/**
 * A route of an API family: method, path in the spec's own notation (`{name}` parameters,
 * AIP-136 custom methods such as `{tenant_id}:decommission`), TypeBox schemas for every input
 * and for each response status. The server, the typed client and the OpenAPI document are all
 * derived from these objects, so they cannot drift apart.
 */
export interface Route<
  M extends Method = Method,
  P extends string = string,
  Params extends TSchema | undefined = TSchema | undefined,
  Query extends TSchema | undefined = TSchema | undefined,
  Body extends TSchema | undefined = TSchema | undefined,
  Responses extends Record<number, TSchema | null> = Record<number, TSchema | null>,
> {
  method: M;
  path: P;
  summary: string;
  /**
   * The user roles that may call it (spec §5.8). `implement()` (src/http/contract.ts) refuses
   * every other role with 403 `forbidden` before anything else of the route runs, and refuses
   * to register an `/api/mssp/*` or `/api/tenant/*` route without it; the permission-matrix
   * test and the web apps' visibility are derived from it. Absent on routes no user role
   * reaches: anonymous ones, service tokens, and the auth family's own-session routes.
   */
  roles?: readonly Role[];
  /**
   * For the reference page (`accessText` adds it to the roles): a narrower rule the service
   * checks on the target (`export: platform_admin`), or the credential of a route without roles
   * (`adapter token`).
   */
  access?: string;
  params?: Params;
  query?: Query;
  body?: Body;
  /** Status → body schema; null for an empty body (204). Errors use the Problem schema. */
  responses: Responses;
  /** Responses that are a stream rather than JSON (server-sent events). */
  stream?: 'text/event-stream';
  /**
   * A GET that writes: an audited secret reveal, whose audit row commits with the answer. Its
   * session is checked before it runs, like a state change's, instead of being confirmed in the
   * read's own round trip (whose transaction is READ ONLY, docs/auth.md).
   */
  writes?: true;
  /**
   * Other representations of the success response, by media type, for a route that also
   * serves something other than JSON (an export chosen by a query parameter). Documentation
   * only: the typed client reads the JSON representation.
   */
  alternativeMedia?: Readonly<Record<string, TSchema>>;
  /**
   * Reachable without a session, proxy identity or token (sign-in, adapter bootstrap); every
   * other route answers 401 without one and 403 to a caller its guards refuse.
   */
  anonymous?: true;
  /**
   * How an MSSP route treats an impersonation token (spec §5.2, §5.8). Every `/api/mssp/*`
   * route must declare it; the server refuses to register one that does not. `deny`: the
   * token is refused. `own_tenant`: allowed only when the route's target tenant — the
   * `tenant_id` path parameter, else the `tenant_id` query parameter (absent means the token's
   * own tenant) — is the token's tenant.
   */
  impersonation?: Impersonation;
}

export type Impersonation = 'deny' | 'own_tenant';

const IMPERSONATION_TEXT: Record<Impersonation, string> = {
  deny: 'not with an impersonation token',
  own_tenant: 'an impersonation token: its own tenant only',
};

/** Who may call a route, as the reference page says it: derived from what the route declares. */
export function accessText(r: Route): string {
  const parts = [
    ...(r.roles ? [r.roles.join(', ')] : []),
    ...(r.impersonation ? [IMPERSONATION_TEXT[r.impersonation]] : []),
    ...(r.access ? [r.access] : []),
  ];
  return parts.join('; ') || (r.anonymous ? 'anonymous' : 'session');
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export function route<
  const M extends Method,
  const P extends string,
  Params extends TSchema | undefined = undefined,
  Query extends TSchema | undefined = undefined,
  Body extends TSchema | undefined = undefined,
  const Responses extends Record<number, TSchema | null> = Record<number, TSchema | null>,
>(
  definition: Route<M, P, Params, Query, Body, Responses>,
): Route<M, P, Params, Query, Body, Responses> {
  return definition;
}

export type Family = Record<string, Route>;

/** RFC 9457 problem details, the body of every error (docs/errors.md lists the codes). */
export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ pattern: '^[a-z][a-z_]*$' }),
    detail: Type.Optional(Type.String()),
    instance: Type.Optional(Type.String()),
    request_id: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
export type Problem = Static<typeof Problem>;

export type StaticOrUndefined<S> = S extends TSchema ? Static<S> : undefined;

type Declared<S> = Exclude<S, undefined>;

/** What a caller passes: only the parts the route declares. */
export type RouteInput<R extends Route> = ([Declared<R['params']>] extends [never]
  ? unknown
  : { params: Static<Declared<R['params']> & TSchema> }) &
  ([Declared<R['query']>] extends [never]
    ? unknown
    : { query?: Static<Declared<R['query']> & TSchema> }) &
  ([Declared<R['body']>] extends [never]
    ? unknown
    : { body: Static<Declared<R['body']> & TSchema> });

/** Statuses any route may answer with a problem (validation, auth, CSRF, limits, faults). */
export type ProblemStatus =
  | 400
  | 401
  | 403
  | 404
  | 405
  | 409
  | 413
  | 415
  | 422
  | 423
  | 429
  | 500
  | 503;

/** What a caller gets: one member per declared success status, or a problem. */
export type RouteResponse<R extends Route> =
  | {
      [S in keyof R['responses'] & number]: S extends ProblemStatus
        ? never
        : {
            status: S;
            body: R['responses'][S] extends TSchema ? Static<R['responses'][S]> : undefined;
            headers: Headers;
          };
    }[keyof R['responses'] & number]
  | { status: ProblemStatus; body: Problem; headers: Headers };

export const Uuid = Type.String({ format: 'uuid' });
