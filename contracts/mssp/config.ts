import Type from 'typebox';
import { MSSP_OPERATORS, MSSP_ROLES } from '../roles.ts';
import { Problem } from '../route.ts';
import {
  ConfigRevision,
  TenantConfigUpdate,
  TenantConfigView,
} from '../tenant-config-revisions.ts';
import { Cursor, Limit, msspRoute, TenantParams } from './route.ts';

/** Configuration revisions (docs/operations.md "Configuration revisions"). */
export const msspConfigContract = {
  getConfig: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/config',
    summary:
      "A tenant's applied configuration (secret-free), its revision and the revision being rolled out",
    roles: MSSP_ROLES,
    params: TenantParams,
    responses: { 200: TenantConfigView, 404: Problem },
  }),
  putConfig: msspRoute('deny', {
    method: 'PUT',
    path: '/api/mssp/tenants/{tenant_id}/config',
    summary:
      "Change an active tenant's configuration: a new revision the orchestrator rolls out like an upgrade (202); an unchanged configuration writes nothing (200)",
    roles: MSSP_OPERATORS,
    params: TenantParams,
    body: TenantConfigUpdate,
    responses: {
      200: TenantConfigView,
      202: TenantConfigView,
      400: Problem,
      403: Problem,
      404: Problem,
      409: Problem,
      422: Problem,
      503: Problem,
    },
  }),
  listConfigRevisions: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/config/revisions',
    summary: "A tenant's configuration revisions, newest first, each with its outcome",
    roles: MSSP_ROLES,
    params: TenantParams,
    query: Type.Object(
      { limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        {
          items: Type.Array(ConfigRevision),
          next_cursor: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
      400: Problem,
      404: Problem,
    },
  }),
} as const;
