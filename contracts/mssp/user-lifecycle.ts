import Type from 'typebox';
import { PLATFORM_ADMINS } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { msspRoute } from './route.ts';
import { User } from './user-management.ts';

/**
 * The MSSP user lifecycle (docs/operations.md "MSSP users"): platform_admin only (spec §5.8 gives
 * mssp_admin read and invite on MSSP-side users). Customer users are not found here (404): they
 * have `…/tenants/{tenant_id}/users/{user_id}:deactivate`.
 */
const UserOnly = Type.Object({ id: Uuid }, { additionalProperties: false });
const OneUser = Type.Object({ user: User }, { additionalProperties: false });
export const msspUserLifecycleContract = {
  disableUser: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/users/{id}:disable',
    summary:
      'Disable an MSSP user and revoke all of its sessions (idempotent); never the last enabled platform_admin or oneself',
    roles: PLATFORM_ADMINS,
    params: UserOnly,
    responses: { 200: OneUser, 403: Problem, 404: Problem, 409: Problem },
  }),
  enableUser: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/users/{id}:enable',
    summary: 'Enable a disabled MSSP user (idempotent)',
    roles: PLATFORM_ADMINS,
    params: UserOnly,
    responses: { 200: OneUser, 403: Problem, 404: Problem },
  }),
  changeUserRole: msspRoute('deny', {
    method: 'PATCH',
    path: '/api/mssp/users/{id}',
    summary:
      "Change an MSSP user's role and revoke all of its sessions; never demote the last enabled platform_admin or oneself",
    roles: PLATFORM_ADMINS,
    params: UserOnly,
    body: Type.Object(
      {
        role: Type.Union([
          Type.Literal('platform_admin'),
          Type.Literal('mssp_admin'),
          Type.Literal('analyst'),
        ]),
      },
      { additionalProperties: false },
    ),
    responses: { 200: OneUser, 403: Problem, 404: Problem, 409: Problem },
  }),
} as const;
