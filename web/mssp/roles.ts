import type { Role } from '../shared/routing.ts';

/**
 * Who may change things, from the `access` lines of contracts/mssp.ts: tenant create,
 * upgrade, retry, decommission, tenant users and the triage policy. The console offers these
 * actions to no one else; the API refuses them anyway.
 */
export const ADMINS: readonly Role[] = ['platform_admin', 'mssp_admin'];

export function isAdmin(role: Role): boolean {
  return ADMINS.includes(role);
}
