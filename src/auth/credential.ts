import type { Role } from './identity.ts';

/**
 * What a request proved itself with, kept for work that outlives the request (an event stream):
 * enough to re-check it later and to know when it stops being valid on its own.
 */
export type Credential =
  | (CredentialHolder & {
      kind: 'session';
      /** sessions.id, the row id (never the cookie's secret). */
      sessionId: string;
      absoluteExpiry: Date;
      /** The idle deadline as this request left it; other requests may slide it later. */
      idleExpiry: Date;
    })
  | (CredentialHolder & { kind: 'token'; expiresAt: Date })
  | (CredentialHolder & { kind: 'proxy' });

export interface CredentialHolder {
  userId: string;
  role: Role;
  /** The user's own tenant (null for MSSP staff): the RLS scope its row is read in. */
  userTenant: string | null;
}

/**
 * Why a credential no longer holds. `revoked`: something was done to it or its user (logout,
 * password reset or change, deactivation, a role change, a forced password change, the
 * suspension of a customer's tenant). `expired`: it ran out (session absolute or idle expiry,
 * token exp).
 */
export type CredentialEnd =
  | {
      event: 'revoked';
      reason:
        | 'session_revoked'
        | 'user_disabled'
        | 'role_changed'
        | 'password_change_required'
        | 'tenant_suspended';
    }
  | { event: 'expired'; reason: 'session_expired' | 'token_expired' };

/**
 * The instant the credential stops being valid whatever else happens: a session's absolute
 * expiry, a token's exp. Proxy headers have none. A session's idle expiry is not one: other
 * requests of the session may slide it, so only the session row can tell (credential-watch.ts).
 */
export function hardDeadline(credential: Credential): Date | undefined {
  switch (credential.kind) {
    case 'session':
      return credential.absoluteExpiry;
    case 'token':
      return credential.expiresAt;
    case 'proxy':
      return undefined;
  }
}

/** `expired` once `now` reaches the hard deadline, as the session middleware and verify judge. */
export function expiryAt(credential: Credential, now: Date): CredentialEnd | undefined {
  const deadline = hardDeadline(credential);
  if (deadline === undefined || now < deadline) return undefined;
  return {
    event: 'expired',
    reason: credential.kind === 'token' ? 'token_expired' : 'session_expired',
  };
}
