import Type from 'typebox';
import { MSSP_OPERATORS } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { msspRoute, TenantParams } from './route.ts';

const Port = Type.Integer({ minimum: 0, maximum: 65_535 });

/** Where agents reach the tenant's manager (docs/enrollment.md "The answer"). */
export const ManagerEndpoint = Type.Object(
  {
    mode: Type.Union([Type.Literal('loadbalancer'), Type.Literal('edge-proxy')]),
    /** `ready`: agents can dial `addresses[0]`; `pending`: no address yet, `pending_reason` says why. */
    status: Type.Union([Type.Literal('ready'), Type.Literal('pending')]),
    pending_reason: Type.Union([Type.String(), Type.Null()]),
    /** Best first: the configured hostname, then the load balancer's addresses. */
    addresses: Type.Array(Type.String()),
    ports: Type.Object({ events: Port, enrollment: Port }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

/** Ready-to-paste agent installs, each a multi-line shell (deb, rpm) or PowerShell (msi) script. */
export const InstallCommands = Type.Object(
  { deb: Type.String(), rpm: Type.String(), msi: Type.String() },
  { additionalProperties: false },
);

export const EnrollmentView = Type.Object(
  {
    tenant_id: Uuid,
    slug: Type.String(),
    manager: ManagerEndpoint,
    /** The manager's `authd.pass`: agents send it to enroll (WAZUH_REGISTRATION_PASSWORD). */
    password: Type.String(),
    /** Version of the Secret holding it (tenant_secrets); each rotation adds one. */
    secret_version: Type.Integer({ minimum: 1 }),
    /** svc's enrollment CA of this tenant (PEM): agents check the manager against it (WAZUH_REGISTRATION_CA). */
    ca_pem: Type.String(),
    /** The agent version the commands install: the manager's own. */
    agent_version: Type.String(),
    /** Null while `manager.status` is `pending`. */
    commands: Type.Union([InstallCommands, Type.Null()]),
  },
  { additionalProperties: false },
);

export const EnrollmentRotation = Type.Object(
  {
    tenant_id: Uuid,
    secret_version: Type.Integer({ minimum: 1 }),
    rotated_at: Timestamp,
    /** `started`: the manager restarts onto the new password; `not_installed`: no manager yet. */
    manager_rollout: Type.Union([Type.Literal('started'), Type.Literal('not_installed')]),
  },
  { additionalProperties: false },
);

/**
 * Agent enrollment (docs/enrollment.md): a secret reveal and its rotation, so only the roles
 * that change tenants, never with an impersonation token (a token acting as the customer is not
 * the MSSP handing out its manager's password).
 */
export const msspEnrollmentContract = {
  getEnrollment: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/enrollment',
    summary:
      "What an agent install needs to join an active tenant's manager: address and ports, the enrollment password, the CA and install commands; audited as tenant.enrollment.reveal, Cache-Control: no-store",
    roles: MSSP_OPERATORS,
    // The reveal's audit row commits with the answer.
    writes: true,
    params: TenantParams,
    responses: {
      200: EnrollmentView,
      403: Problem,
      404: Problem,
      409: Problem,
      503: Problem,
    },
  }),
  rotateEnrollment: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}:rotate-enrollment',
    summary:
      "Replace an active tenant's enrollment password: a new Secret version, the manager restarts and refuses the old one; enrolled agents keep their keys; audited as tenant.enrollment.rotate",
    roles: MSSP_OPERATORS,
    params: TenantParams,
    responses: {
      202: EnrollmentRotation,
      403: Problem,
      404: Problem,
      409: Problem,
      503: Problem,
    },
  }),
} as const;
