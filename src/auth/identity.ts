import type * as s from 'zapatos/schema';
import type { AuthMode } from '../config/index.ts';
import type { Narrowed } from '../db/rows.ts';

export type Role = 'platform_admin' | 'mssp_admin' | 'analyst' | 'customer_viewer';
export const MSSP_ROLES: readonly Role[] = ['platform_admin', 'mssp_admin', 'analyst'];

/**
 * The one identity shape both auth modes produce (spec §5.1), kept on the request context as
 * `identity`; authorization checks read only this.
 */
export interface Identity {
  user_id: string;
  email: string;
  display_name: string | null;
  role: Role;
  user_type: 'mssp' | 'tenant';
  /** The customer's tenant; null for MSSP staff. */
  tenant_id: string | null;
  auth_mode: AuthMode;
  must_change: boolean;
  /** Internal mode only: the session this request authenticated with. */
  session_id: string | null;
  /** Proxy mode only: the groups header as received; not used for authorization. */
  groups: string[];
  /** How this request proved it: session cookie, proxy headers, or a bearer token. */
  via: 'session' | 'proxy' | 'token';
  /** Set by an impersonation token (spec §5.2): the one tenant this MSSP user acts as. */
  current_tenant: string | null;
}

/** The user columns an identity is made of; `role` narrowed from the column's text. */
export type UserRow = Narrowed<
  Pick<s.users.Selectable, 'id' | 'tenant_id' | 'email' | 'display_name' | 'role' | 'disabled_at'>,
  { role: Role }
>;

export function identityOf(
  user: UserRow,
  extra: {
    auth_mode: AuthMode;
    must_change: boolean;
    session_id: string | null;
    groups?: string[];
    via: Identity['via'];
    current_tenant?: string | null;
  },
): Identity {
  return {
    user_id: user.id,
    email: user.email,
    display_name: user.display_name,
    role: user.role,
    user_type: user.tenant_id === null ? 'mssp' : 'tenant',
    tenant_id: user.tenant_id,
    auth_mode: extra.auth_mode,
    must_change: extra.must_change,
    session_id: extra.session_id,
    groups: extra.groups ?? [],
    via: extra.via,
    current_tenant: extra.current_tenant ?? null,
  };
}
