import type { TSchema } from 'typebox';
import Type from 'typebox';
import type { Role } from '../roles.ts';
import { type Impersonation, type Method, type Route, route, Uuid } from '../route.ts';

/**
 * `route()` for the MSSP family: every MSSP route declares how it treats an impersonation
 * token (spec §5.2) and which roles may call it (spec §5.8); the server refuses to register an
 * `/api/mssp/*` route without either, and this signature makes both a type error first.
 */
export function msspRoute<
  const M extends Method,
  const P extends string,
  Params extends TSchema | undefined = undefined,
  Query extends TSchema | undefined = undefined,
  Body extends TSchema | undefined = undefined,
  const Responses extends Record<number, TSchema | null> = Record<number, TSchema | null>,
  const I extends Impersonation = Impersonation,
>(
  impersonation: I,
  definition: Route<M, P, Params, Query, Body, Responses> & { roles: readonly Role[] },
): Route<M, P, Params, Query, Body, Responses> & {
  impersonation: I;
  roles: readonly Role[];
} {
  return { ...route(definition), roles: definition.roles, impersonation };
}

/** The shared inputs of MSSP lists and tenant-scoped routes. */
export const Limit = Type.Integer({ minimum: 1, maximum: 200 });
export const Cursor = Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$' });
export const TenantParams = Type.Object({ tenant_id: Uuid }, { additionalProperties: false });
