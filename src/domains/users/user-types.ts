import type * as s from 'zapatos/schema';
import type { Identity, Role } from '../../auth/identity.ts';

/** A user as the management API lists it; `role` narrowed from the column's text. */
export type ManagedUser = Pick<
  s.users.Selectable,
  'id' | 'email' | 'display_name' | 'tenant_id' | 'disabled_at' | 'created_at'
> & { role: Role };

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

export class UserNotFoundError extends Error {
  override name = 'UserNotFoundError';
}

export class TenantNotFoundError extends Error {
  override name = 'TenantNotFoundError';
}

/** The actor's role may not do this to this user (spec §5.8). */
export class UserForbiddenError extends Error {
  override name = 'UserForbiddenError';
}

/** Resetting one's own password: the change-password page is the way (it needs the current one). */
export class CannotResetSelfError extends Error {
  override name = 'CannotResetSelfError';
}

export class EmailTakenError extends Error {
  override name = 'EmailTakenError';
}

/** Another user's email differs only by look-alike characters (sql/0012). */
export class EmailConfusableError extends Error {
  override name = 'EmailConfusableError';
}

export class AlreadyDeactivatedError extends Error {
  override name = 'AlreadyDeactivatedError';
}

/** Disabling or demoting the one enabled platform_admin would leave the install without one. */
export class LastPlatformAdminError extends Error {
  override name = 'LastPlatformAdminError';
}

/** A user may not disable itself or change its own role (another platform_admin must). */
export class CannotChangeSelfError extends Error {
  override name = 'CannotChangeSelfError';
  constructor(readonly change: 'disable' | 'role') {
    super(change === 'disable' ? 'You cannot disable yourself' : 'You cannot change your own role');
  }
}
