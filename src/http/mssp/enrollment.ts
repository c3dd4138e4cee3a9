import { Hono } from 'hono';
import { msspEnrollmentContract as contract } from '../../../contracts/mssp.ts';
import type { EnrollmentService } from '../../domains/enrollment/enrollment-service.ts';
import { implement } from '../contract.ts';

/**
 * `GET /api/mssp/tenants/{tenant_id}/enrollment` and `:rotate-enrollment` (docs/enrollment.md).
 * Both routes declare `deny`, so an impersonation token never gets here (src/http/impersonation.ts).
 * The reveal carries a password: `no-store` keeps it out of every cache, the rotation's answer
 * too (it names the new Secret version the next reveal returns).
 */
export function enrollmentRoutes(enrollment: EnrollmentService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.getEnrollment,
  )(async (c, { params }) => {
    c.header('Cache-Control', 'no-store');
    const v = await enrollment.reveal(c.get('identity'), params.tenant_id);
    return {
      status: 200,
      body: {
        tenant_id: v.tenantId,
        slug: v.slug,
        manager: {
          mode: v.manager.mode,
          status: v.manager.pending === null ? ('ready' as const) : ('pending' as const),
          pending_reason: v.manager.pending,
          addresses: v.manager.addresses,
          ports: v.manager.ports,
        },
        password: v.password,
        secret_version: v.secretVersion,
        ca_pem: v.caPem,
        agent_version: v.agentVersion,
        commands: v.commands,
      },
    };
  });

  implement(
    app,
    contract.rotateEnrollment,
  )(async (c, { params }) => {
    c.header('Cache-Control', 'no-store');
    const r = await enrollment.rotate(c.get('identity'), params.tenant_id);
    return {
      status: 202,
      body: {
        tenant_id: r.tenantId,
        secret_version: r.secretVersion,
        rotated_at: r.rotatedAt,
        manager_rollout: r.managerRollout,
      },
    };
  });

  return app;
}
