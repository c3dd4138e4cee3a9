import type * as s from 'zapatos/schema';
import type { Identity, Role } from '../../auth/identity.ts';
import type { Narrowed } from '../../db/rows.ts';
import { DomainError } from '../domain-error.ts';

/** A user as the management API lists it; `role` narrowed from the column's text. */
export type ManagedUser = Narrowed<
  Pick<
    s.users.Selectable,
    'id' | 'email' | 'display_name' | 'role' | 'tenant_id' | 'disabled_at' | 'created_at'
  >,
  { role: Role }
>;

export type NewUser = { email: string; display_name?: string | undefined; role: Role };

/** Who asks: the signed-in user of an API request, or the operator at the console. */
export type Actor =
  | { kind: 'user'; userId: string; role: Role; actingAs: string | null }
  | { kind: 'operator' };

export type UserActor = Extract<Actor, { kind: 'user' }>;

/** The signed-in caller as an actor; `actingAs` is the tenant an impersonation token names. */
export function actorOf(identity: Identity): UserActor {
  return {
    kind: 'user',
    userId: identity.user_id,
    role: identity.role,
    actingAs: identity.current_tenant,
  };
}

/** `among`: where the user was looked for, which the answer names (docs/errors.md `user_not_found`). */
export class UserNotFoundError extends DomainError {
  override name = 'UserNotFoundError';
  readonly code = 'user_not_found';
  constructor(
    message: string,
    readonly among: 'users' | 'tenant' | 'mssp' = 'users',
  ) {
    super(message);
  }
}

export class TenantNotFoundError extends DomainError {
  override name = 'TenantNotFoundError';
  readonly code = 'tenant_not_found';
}

/** The actor's role may not do this to this user (spec §5.8). */
export class UserForbiddenError extends DomainError {
  override name = 'UserForbiddenError';
  readonly code = 'forbidden';
}

/** Resetting one's own password: the change-password page is the way (it needs the current one). */
export class CannotResetSelfError extends DomainError {
  override name = 'CannotResetSelfError';
  readonly code = 'cannot_reset_self';
}

export class EmailTakenError extends DomainError {
  override name = 'EmailTakenError';
  readonly code = 'email_taken';
}

/** Another user's email differs only by look-alike characters (sql/0012). */
export class EmailConfusableError extends DomainError {
  override name = 'EmailConfusableError';
  readonly code = 'email_confusable';
}

export class AlreadyDeactivatedError extends DomainError {
  override name = 'AlreadyDeactivatedError';
  readonly code = 'already_deactivated';
}

/** Disabling or demoting the one enabled platform_admin would leave the install without one. */
export class LastPlatformAdminError extends DomainError {
  override name = 'LastPlatformAdminError';
  readonly code = 'last_platform_admin';
}

/** A user may not disable itself or change its own role (another platform_admin must). */
export class CannotChangeSelfError extends DomainError {
  override name = 'CannotChangeSelfError';
  readonly code: 'cannot_disable_self' | 'cannot_change_own_role';
  constructor(readonly change: 'disable' | 'role') {
    super(change === 'disable' ? 'You cannot disable yourself' : 'You cannot change your own role');
    this.code = change === 'disable' ? 'cannot_disable_self' : 'cannot_change_own_role';
  }
}
