import { randomUUID } from 'node:crypto';
import { decodeProtectedHeader, errors, jwtVerify, SignJWT } from 'jose';
import {
  type AdapterClaims,
  CLAIMS,
  type ClaimsByKind,
  ISSUER,
  LIFETIMES,
  MSSP_ROLES,
  type MsspRole,
  type MsspUserClaims,
  type TenantUserClaims,
  type TokenKind,
  UUID_PATTERN,
  type WorkerClaims,
} from './claims.ts';
import type { SigningKey } from './keys.ts';

/** The one algorithm svc signs with and the only one verify accepts. */
export const ALGORITHM = 'EdDSA';
/** Allowed skew between the replica that minted a token and the one verifying it. */
export const CLOCK_TOLERANCE_SECONDS = 5;
/** Our tokens are about 500 characters; anything far longer is refused before parsing. */
export const MAX_TOKEN_LENGTH = 4096;

const TYP = 'JWT';
const HEADER_FIELDS = new Set(['alg', 'kid', 'typ']);
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export type TokenErrorReason =
  | 'malformed'
  | 'wrong_algorithm'
  | 'unknown_key'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_kind'
  | 'bad_claims';

/** Every verification failure; the HTTP layer answers 401 for all of them. */
export class TokenError extends Error {
  override name = 'TokenError';
  readonly reason: TokenErrorReason;
  constructor(reason: TokenErrorReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

export type TokenMintErrorReason = 'invalid_ttl' | 'role_not_allowed' | 'invalid_claims';

/** A mint request svc refuses (e.g. impersonation beyond 30 min); the caller's input is wrong. */
export class TokenMintError extends Error {
  override name = 'TokenMintError';
  readonly reason: TokenMintErrorReason;
  constructor(reason: TokenMintErrorReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface Minted<C> {
  token: string;
  /** The exact claim set signed, for the audit row written at mint time (spec §5.2). */
  claims: C;
}

export interface TokenServiceDeps {
  key: SigningKey;
  now: () => Date;
}

export interface TokenService {
  mintMsspUser(input: { userId: string; role: MsspRole }): Promise<Minted<MsspUserClaims>>;
  /** An MSSP token with current_tenant set; role customer_viewer and ttl > 1800 s are refused. */
  mintImpersonation(input: {
    userId: string;
    role: string;
    tenantId: string;
    ttlSeconds?: number;
  }): Promise<Minted<MsspUserClaims>>;
  mintTenantUser(input: { userId: string; tenantId: string }): Promise<Minted<TenantUserClaims>>;
  /** `ttlSeconds` lets the dispatcher bound the token by the job's own deadline. */
  mintWorker(input: {
    tenantId: string;
    jobId: string;
    jobType: string;
    ttlSeconds?: number;
  }): Promise<Minted<WorkerClaims>>;
  mintAdapter(input: { tenantId: string }): Promise<Minted<AdapterClaims>>;
  /** Returns the claims of a genuine, current token of kind `expect`, or throws TokenError. */
  verify<K extends TokenKind>(token: string, options: { expect: K }): Promise<ClaimsByKind[K]>;
}

export function createTokenService({ key, now }: TokenServiceDeps): TokenService {
  async function mint<K extends TokenKind>(
    kind: K,
    ttlSeconds: number,
    build: (base: { iat: number; exp: number; jti: string }) => ClaimsByKind[K],
  ): Promise<Minted<ClaimsByKind[K]>> {
    const iat = Math.floor(now().getTime() / 1000);
    const claims = build({ iat, exp: iat + ttlSeconds, jti: randomUUID() });
    // Checking our own output against the schema verify applies means a token that mints
    // always verifies, and a bad id from a caller fails here rather than at first use.
    if (!CLAIMS[kind].check(claims)) {
      throw new TokenMintError('invalid_claims', `${kind} token claims do not match spec §5.2`);
    }
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: ALGORITHM, kid: key.kid, typ: TYP })
      .sign(key.privateKey);
    return { token, claims };
  }

  return {
    mintMsspUser({ userId, role }) {
      return mint('mssp', LIFETIMES.msspUser, (base) => ({
        iss: ISSUER,
        sub: userSubject(userId),
        ...base,
        user_type: 'mssp',
        role,
        current_tenant: null,
      }));
    },

    async mintImpersonation({
      userId,
      role,
      tenantId,
      ttlSeconds = LIFETIMES.impersonationDefault,
    }) {
      if (!isMsspRole(role)) {
        throw new TokenMintError('role_not_allowed', `role ${role} cannot enter a tenant context`);
      }
      checkTtl(ttlSeconds, LIFETIMES.impersonationMax);
      return mint('mssp', ttlSeconds, (base) => ({
        iss: ISSUER,
        sub: userSubject(userId),
        ...base,
        user_type: 'mssp',
        role,
        current_tenant: canonical(tenantId),
      }));
    },

    mintTenantUser({ userId, tenantId }) {
      return mint('tenant', LIFETIMES.tenantUser, (base) => ({
        iss: ISSUER,
        sub: userSubject(userId),
        ...base,
        user_type: 'tenant',
        role: 'customer_viewer',
        tenant_id: canonical(tenantId),
      }));
    },

    async mintWorker({ tenantId, jobId, jobType, ttlSeconds = LIFETIMES.workerDefault }) {
      checkTtl(ttlSeconds, LIFETIMES.workerMax);
      return mint('worker', ttlSeconds, (base) => ({
        iss: ISSUER,
        sub: 'worker',
        ...base,
        user_type: 'worker',
        tenant_id: canonical(tenantId),
        job_id: canonical(jobId),
        job_type: jobType,
      }));
    },

    mintAdapter({ tenantId }) {
      return mint('adapter', LIFETIMES.adapter, (base) => ({
        iss: ISSUER,
        sub: 'adapter',
        ...base,
        user_type: 'adapter',
        tenant_id: canonical(tenantId),
        scope: 'adapter',
      }));
    },

    async verify<K extends TokenKind>(token: string, { expect }: { expect: K }) {
      checkHeader(token, key.kid);
      const at = now();
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(token, key.publicKey, {
          algorithms: [ALGORITHM],
          issuer: ISSUER,
          typ: TYP,
          requiredClaims: ['iat', 'exp', 'jti', 'sub', 'user_type'],
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          currentDate: at,
        }));
      } catch (error) {
        throw fromJose(error);
      }
      const nowSeconds = at.getTime() / 1000;
      // jose checks iat only with maxTokenAge; a token issued in the future is refused here.
      if (typeof payload.iat === 'number' && payload.iat > nowSeconds + CLOCK_TOLERANCE_SECONDS) {
        throw new TokenError('not_yet_valid', 'token is issued in the future');
      }
      if (payload.user_type !== expect) {
        throw new TokenError('wrong_kind', `a ${expect} token is required here`);
      }
      const claims = CLAIMS[expect];
      if (!claims.check(payload)) {
        throw new TokenError('bad_claims', `claims do not match the ${expect} token schema`);
      }
      const lifetime = payload.exp - payload.iat;
      if (lifetime <= 0 || lifetime > claims.maxLifetime(payload)) {
        throw new TokenError('bad_claims', 'token lifetime is outside what svc mints');
      }
      return payload;
    },
  };
}

/**
 * Header checks run before the signature: the algorithm is pinned from our side, never taken
 * from the token, and only the header fields svc itself writes are allowed.
 */
function checkHeader(token: string, kid: string): void {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) {
    throw new TokenError('malformed', 'not a compact JWS');
  }
  let header: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw new TokenError('malformed', 'token header is not valid JSON');
  }
  if (header.alg !== ALGORITHM) {
    throw new TokenError('wrong_algorithm', `only ${ALGORITHM} tokens are accepted`);
  }
  if (Object.keys(header).some((field) => !HEADER_FIELDS.has(field)) || header.typ !== TYP) {
    throw new TokenError('malformed', 'token header has unexpected fields');
  }
  if (header.kid !== kid) throw new TokenError('unknown_key', 'token was not signed by our key');
}

function fromJose(error: unknown): TokenError {
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return new TokenError('bad_signature', 'signature verification failed');
  }
  if (error instanceof errors.JWTExpired) return new TokenError('expired', 'token has expired');
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return new TokenError('wrong_algorithm', `only ${ALGORITHM} tokens are accepted`);
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return new TokenError('wrong_issuer', `issuer must be ${ISSUER}`);
    if (error.claim === 'nbf') return new TokenError('not_yet_valid', 'token is not valid yet');
    return new TokenError('bad_claims', `claim ${error.claim} is missing or invalid`);
  }
  if (error instanceof errors.JOSEError) return new TokenError('malformed', 'token is malformed');
  // Anything else is a fault in svc, not in the token: let it surface as one.
  throw error;
}

function userSubject(userId: string): string {
  return `user_${canonical(userId)}`;
}

/** Ids arrive from URLs and database rows; tokens carry the lowercase form only. */
function canonical(uuid: string): string {
  const lower = uuid.toLowerCase();
  return UUID_PATTERN.test(lower) ? lower : uuid;
}

function isMsspRole(role: string): role is MsspRole {
  return (MSSP_ROLES as readonly string[]).includes(role);
}

function checkTtl(ttlSeconds: number, max: number): void {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > max) {
    throw new TokenMintError('invalid_ttl', `ttlSeconds must be an integer from 1 to ${max}`);
  }
}
