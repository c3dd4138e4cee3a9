import Type, { type TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { CANONICAL_UUID } from '../../contracts/uuid.ts';

/** The only issuer svc mints and accepts (spec §5.2, contract spelling). */
export const ISSUER = 'svc';

/** `user_type` values; each names the API family a token may be presented to. */
export type TokenKind = 'mssp' | 'tenant' | 'worker' | 'adapter';
export const TOKEN_KINDS: readonly TokenKind[] = ['mssp', 'tenant', 'worker', 'adapter'];

export type MsspRole = 'platform_admin' | 'mssp_admin' | 'analyst';
export const MSSP_ROLES: readonly MsspRole[] = ['platform_admin', 'mssp_admin', 'analyst'];

/** Lifetimes in seconds; docs/tokens.md explains each choice. */
export const LIFETIMES = {
  msspUser: 15 * 60,
  impersonationDefault: 15 * 60,
  /** Spec §5.2 / §8: impersonation tokens live at most 30 minutes. */
  impersonationMax: 30 * 60,
  tenantUser: 15 * 60,
  workerDefault: 10 * 60,
  workerMax: 60 * 60,
  /** Refreshed weekly (spec §8); the extra day keeps a late refresh from cutting the adapter off. */
  adapter: 8 * 24 * 60 * 60,
} as const;

// Lowercase canonical form only: we mint every token, so one spelling per id keeps string
// comparisons of `sub` and tenant ids elsewhere exact.
const UUID = CANONICAL_UUID;
export const UUID_PATTERN = new RegExp(`^${UUID}$`);

const Uuid = Type.String({ pattern: `^${UUID}$` });
const NumericDate = Type.Integer({ minimum: 0 });
const UserSubject = Type.String({ pattern: `^user_${UUID}$` });
const closed = { additionalProperties: false } as const;

export const MsspUserClaims = Type.Object(
  {
    iss: Type.Literal(ISSUER),
    sub: UserSubject,
    iat: NumericDate,
    exp: NumericDate,
    jti: Uuid,
    user_type: Type.Literal('mssp'),
    role: Type.Union([
      Type.Literal('platform_admin'),
      Type.Literal('mssp_admin'),
      Type.Literal('analyst'),
    ]),
    current_tenant: Type.Union([Type.Null(), Uuid]),
  },
  closed,
);
export type MsspUserClaims = Type.Static<typeof MsspUserClaims>;

export const TenantUserClaims = Type.Object(
  {
    iss: Type.Literal(ISSUER),
    sub: UserSubject,
    iat: NumericDate,
    exp: NumericDate,
    jti: Uuid,
    user_type: Type.Literal('tenant'),
    role: Type.Literal('customer_viewer'),
    tenant_id: Uuid,
  },
  closed,
);
export type TenantUserClaims = Type.Static<typeof TenantUserClaims>;

export const WorkerClaims = Type.Object(
  {
    iss: Type.Literal(ISSUER),
    sub: Type.Literal('worker'),
    iat: NumericDate,
    exp: NumericDate,
    jti: Uuid,
    user_type: Type.Literal('worker'),
    tenant_id: Uuid,
    job_id: Uuid,
    // Same shape as a job payload's job_type (src/workers): the set of job types is open.
    job_type: Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }),
  },
  closed,
);
export type WorkerClaims = Type.Static<typeof WorkerClaims>;

export const AdapterClaims = Type.Object(
  {
    iss: Type.Literal(ISSUER),
    sub: Type.Literal('adapter'),
    iat: NumericDate,
    exp: NumericDate,
    jti: Uuid,
    user_type: Type.Literal('adapter'),
    tenant_id: Uuid,
    scope: Type.Literal('adapter'),
  },
  closed,
);
export type AdapterClaims = Type.Static<typeof AdapterClaims>;

export interface ClaimsByKind {
  mssp: MsspUserClaims;
  tenant: TenantUserClaims;
  worker: WorkerClaims;
  adapter: AdapterClaims;
}

interface ClaimsCheck<K extends TokenKind> {
  check(value: unknown): value is ClaimsByKind[K];
  /** Longest exp - iat a genuine token of this kind can carry. */
  maxLifetime(claims: ClaimsByKind[K]): number;
}

function checker<K extends TokenKind>(
  schema: TSchema,
  maxLifetime: (claims: ClaimsByKind[K]) => number,
): ClaimsCheck<K> {
  const compiled = Compile(schema);
  return {
    check: (value: unknown): value is ClaimsByKind[K] => compiled.Check(value),
    maxLifetime,
  };
}

export const CLAIMS: { [K in TokenKind]: ClaimsCheck<K> } = {
  mssp: checker<'mssp'>(MsspUserClaims, (c) =>
    c.current_tenant === null ? LIFETIMES.msspUser : LIFETIMES.impersonationMax,
  ),
  tenant: checker<'tenant'>(TenantUserClaims, () => LIFETIMES.tenantUser),
  worker: checker<'worker'>(WorkerClaims, () => LIFETIMES.workerMax),
  adapter: checker<'adapter'>(AdapterClaims, () => LIFETIMES.adapter),
};
