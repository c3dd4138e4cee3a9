import { msspContract, type Route } from '../../contracts/index.ts';
import type { Role } from '../shared/routing.ts';

/** Whether the API lets `role` call `route`: the roles the route declares in contracts/mssp/. */
export function mayCall(role: Role, route: Route): boolean {
  return route.roles?.includes(role) ?? false;
}

const M = msspContract;

/**
 * The routes behind the console's admin actions: tenant create, upgrade, retry, suspend and
 * resume, decommission, tenant users, the triage policy, branding and configuration.
 */
const ADMIN_ROUTES: readonly Route[] = [
  M.createTenant,
  M.upgrade,
  M.retry,
  M.suspend,
  M.resume,
  M.decommission,
  M.listTenantUsers,
  M.createTenantUser,
  M.deactivateTenantUser,
  M.putTriagePolicy,
  M.putBranding,
  M.putConfig,
];

/**
 * Who may change things: the roles every admin action's route declares. The console offers
 * these actions to no one else; the API refuses them anyway.
 */
export const ADMINS: readonly Role[] = M.createTenant.roles.filter((role) =>
  ADMIN_ROUTES.every((r) => mayCall(role, r)),
);

export function isAdmin(role: Role): boolean {
  return ADMINS.includes(role);
}
