import Type from 'typebox';
import { Email } from '../email.ts';
import { MSSP_OPERATORS, MSSP_ROLES } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { msspRoute } from './route.ts';

export const User = Type.Object(
  {
    id: Uuid,
    email: Type.String(),
    display_name: Type.Union([Type.String(), Type.Null()]),
    role: Type.Union([
      Type.Literal('platform_admin'),
      Type.Literal('mssp_admin'),
      Type.Literal('analyst'),
      Type.Literal('customer_viewer'),
    ]),
    tenant_id: Type.Union([Uuid, Type.Null()]),
    disabled_at: Type.Union([Timestamp, Type.Null()]),
    created_at: Timestamp,
  },
  { additionalProperties: false },
);

const NewUser = {
  email: Email,
  display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
};

const Created = Type.Object(
  {
    user: User,
    /** Internal mode only: shown once; the user must change it at first sign-in. */
    initial_password: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const msspUserManagementContract = {
  listUsers: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/users',
    summary: 'MSSP-side users',
    roles: MSSP_ROLES,
    responses: { 200: Type.Object({ items: Type.Array(User) }, { additionalProperties: false }) },
  }),
  createUser: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/users',
    summary:
      'Create an MSSP-side user (platform_admin: any MSSP role; mssp_admin: invite analysts)',
    roles: MSSP_OPERATORS,
    body: Type.Object(
      {
        ...NewUser,
        role: Type.Union([
          Type.Literal('platform_admin'),
          Type.Literal('mssp_admin'),
          Type.Literal('analyst'),
        ]),
      },
      { additionalProperties: false },
    ),
    responses: { 201: Created, 403: Problem, 409: Problem },
  }),
  listTenantUsers: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/users',
    summary: "A tenant's customer users",
    roles: MSSP_OPERATORS,
    params: Type.Object({ tenant_id: Uuid }, { additionalProperties: false }),
    responses: {
      200: Type.Object({ items: Type.Array(User) }, { additionalProperties: false }),
      404: Problem,
    },
  }),
  createTenantUser: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/users',
    summary: 'Create a customer_viewer of the tenant',
    roles: MSSP_OPERATORS,
    params: Type.Object({ tenant_id: Uuid }, { additionalProperties: false }),
    body: Type.Object(NewUser, { additionalProperties: false }),
    responses: { 201: Created, 404: Problem, 409: Problem },
  }),
  deactivateTenantUser: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/users/{user_id}:deactivate',
    summary: "Deactivate a customer user; all of the user's sessions are revoked",
    roles: MSSP_OPERATORS,
    params: Type.Object({ tenant_id: Uuid, user_id: Uuid }, { additionalProperties: false }),
    responses: {
      200: Type.Object({ user: User }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
} as const;
