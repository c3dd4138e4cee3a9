import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomUUID, webcrypto } from 'node:crypto';
import {
  createTokenService,
  type SigningKey,
  signingKeyFromPem,
  TokenError,
  type TokenErrorReason,
  type TokenService,
} from '../../src/tokens/index.ts';

/** 2030-01-01T00:00:00Z: far from the real clock, so nothing passes by accident of "now". */
export const T0 = Date.UTC(2030, 0, 1) / 1000;

export interface Harness {
  key: SigningKey;
  tokens: TokenService;
  /** Moves the service clock to T0 + seconds. */
  at(seconds: number): void;
}

export async function harness(): Promise<Harness> {
  const key = await freshKey();
  let clock = T0 * 1000;
  return {
    key,
    tokens: createTokenService({ key, now: () => new Date(clock) }),
    at(seconds) {
      clock = (T0 + seconds) * 1000;
    },
  };
}

export function freshPem(): string {
  return generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
}

export function freshKey(): Promise<SigningKey> {
  return signingKeyFromPem(freshPem());
}

export function encode(part: unknown): string {
  return Buffer.from(typeof part === 'string' ? part : JSON.stringify(part)).toString('base64url');
}

export function decodePart(part: string | undefined): Record<string, unknown> {
  return JSON.parse(Buffer.from(part ?? '', 'base64url').toString()) as Record<string, unknown>;
}

/** Signs any header and payload with an Ed25519 key, bypassing every check jose would apply. */
export async function signEd(
  privateKey: webcrypto.CryptoKey,
  header: Record<string, unknown>,
  payload: unknown,
): Promise<string> {
  const input = `${encode(header)}.${encode(payload)}`;
  const signature = await webcrypto.subtle.sign('Ed25519', privateKey, Buffer.from(input));
  return `${input}.${Buffer.from(signature).toString('base64url')}`;
}

export function signHs256(
  secret: Uint8Array | string,
  header: Record<string, unknown>,
  payload: unknown,
): string {
  const input = `${encode(header)}.${encode(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/** A header exactly like the ones svc writes. */
export function ourHeader(key: SigningKey): Record<string, unknown> {
  return { alg: 'EdDSA', kid: key.kid, typ: 'JWT' };
}

/** Claims svc would mint for each kind at T0 (15-minute lifetime, within every cap). */
export function claimsOf(kind: 'mssp' | 'tenant' | 'worker' | 'adapter'): Record<string, unknown> {
  const base = { iss: 'svc', iat: T0, exp: T0 + 900, jti: randomUUID() };
  switch (kind) {
    case 'mssp':
      return {
        ...base,
        sub: `user_${randomUUID()}`,
        user_type: 'mssp',
        role: 'analyst',
        current_tenant: null,
      };
    case 'tenant':
      return {
        ...base,
        sub: `user_${randomUUID()}`,
        user_type: 'tenant',
        role: 'customer_viewer',
        tenant_id: randomUUID(),
      };
    case 'worker':
      return {
        ...base,
        sub: 'worker',
        user_type: 'worker',
        tenant_id: randomUUID(),
        job_id: randomUUID(),
        job_type: 'triage',
      };
    case 'adapter':
      return {
        ...base,
        sub: 'adapter',
        user_type: 'adapter',
        tenant_id: randomUUID(),
        scope: 'adapter',
      };
  }
}

export async function rejectsWith(
  attempt: Promise<unknown>,
  reason: TokenErrorReason,
  label: string = reason,
): Promise<void> {
  await assert.rejects(
    attempt,
    (error: unknown) => {
      assert.ok(error instanceof TokenError, `${label}: expected a TokenError, got ${error}`);
      assert.equal(error.reason, reason, label);
      return true;
    },
    label,
  );
}
