import { DomainError } from '../domain-error.ts';
import type { Tenant } from '../tenants/tenant-types.ts';

/** The key of the install-namespace bootstrap Secret holding the manager's `authd.pass` (spec §9.4 step 2). */
export const ENROLLMENT_PASSWORD_KEY = 'monitor-enrollment-secret';

/** The pod-template annotation of the manager naming the password version it was started with. */
export const ENROLLMENT_SECRET_VERSION = 'svc/enrollment-secret-version';

/** Where agents reach a tenant's manager (docs/enrollment.md "The answer"). */
export interface ManagerEndpoint {
  mode: 'loadbalancer' | 'edge-proxy';
  /** What agents dial, best first: the configured hostname, then the load balancer's addresses. */
  addresses: string[];
  ports: { events: number; enrollment: number };
  /** Why there is no address yet (a load balancer not assigned, the edge proxy off); null when there is one. */
  pending: string | null;
}

/**
 * What the enrollment service needs from the cluster beyond the install namespace's Secrets;
 * the orchestrator implements it (src/orchestrator/enrollment-cluster.ts), composed in src/app.
 */
export interface EnrollmentCluster {
  endpoint(tenant: Pick<Tenant, 'id' | 'slug' | 'edge_port_pair'>): Promise<ManagerEndpoint>;
  /** The tenant's enrollment CA certificate (PEM), undefined until svc issued it. */
  caPem(tenantId: string): Promise<string | undefined>;
  /** The tenant namespace's copy of the password, the file the manager mounts. */
  writePassword(tenant: Pick<Tenant, 'id' | 'slug'>, password: string): Promise<void>;
  /**
   * A new pod template for the manager (annotation ENROLLMENT_SECRET_VERSION), so it restarts
   * and reads the password file again; `not_installed` when there is no manager yet.
   */
  rollManager(tenant: Pick<Tenant, 'slug'>, version: number): Promise<'started' | 'not_installed'>;
}

/**
 * What enrollment needs is not in the cluster yet: the enrollment CA (a tenant from before svc
 * issued it; the reconciler does), the password's Secret, or its copy in the tenant namespace.
 */
export class EnrollmentNotReadyError extends DomainError {
  override name = 'EnrollmentNotReadyError';
  readonly code = 'enrollment_not_ready';
  constructor(
    readonly tenantId: string,
    message = 'svc has not issued this tenant’s enrollment certificate yet; its next reconcile pass does',
  ) {
    super(message);
  }
}
