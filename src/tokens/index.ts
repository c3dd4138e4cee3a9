export {
  type AdapterClaims,
  type ClaimsByKind,
  ISSUER,
  LIFETIMES,
  MSSP_ROLES,
  type MsspRole,
  type MsspUserClaims,
  type TenantUserClaims,
  TOKEN_KINDS,
  type TokenKind,
  type WorkerClaims,
} from './claims.ts';
export {
  loadOrCreateSigningKey,
  SIGNING_KEY_FILE,
  type SigningKey,
  signingKeyFromPem,
  TokenKeyError,
} from './keys.ts';
export {
  ALGORITHM,
  CLOCK_TOLERANCE_SECONDS,
  createTokenService,
  type Minted,
  TokenError,
  type TokenErrorReason,
  TokenMintError,
  type TokenMintErrorReason,
  type TokenService,
  type TokenServiceDeps,
} from './service.ts';
