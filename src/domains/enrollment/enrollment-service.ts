// Agent enrollment for the MSSP (docs/enrollment.md): what an agent install needs to join a
// tenant's manager (address and ports, the enrollment password, the CA to trust), revealed to
// platform_admin and mssp_admin and audited as a secret reveal; and the password's rotation.
import { randomBytes } from 'node:crypto';
import type { Identity } from '../../auth/identity.ts';
import type { SecretStore } from '../../cluster/secrets.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { installSecretNames } from '../tenants/tenant-creation.ts';
import { lockTenantOrBusy } from '../tenants/tenant-lifecycle.ts';
import { findTenant } from '../tenants/tenant-repository.ts';
import {
  InvalidStateError,
  TenancyUnavailableError,
  type Tenant,
  TenantNotFoundError,
} from '../tenants/tenant-types.ts';
import { AGENT_VERSION, type InstallCommands, installCommands } from './enrollment-commands.ts';
import { bumpSecretVersion, secretVersion } from './enrollment-repository.ts';
import {
  ENROLLMENT_PASSWORD_KEY,
  type EnrollmentCluster,
  EnrollmentNotReadyError,
  type ManagerEndpoint,
} from './enrollment-types.ts';

export interface EnrollmentView {
  tenantId: string;
  slug: string;
  manager: ManagerEndpoint;
  password: string;
  /** tenant_secrets version of the install-namespace Secret holding the password. */
  secretVersion: number;
  caPem: string;
  agentVersion: string;
  /** Null while the manager has no address agents could dial (`manager.pending`). */
  commands: InstallCommands | null;
}

export interface RotationResult {
  tenantId: string;
  secretVersion: number;
  rotatedAt: Date;
  /** `started`: the manager's pod template changed and it restarts onto the new password. */
  managerRollout: 'started' | 'not_installed';
}

export interface EnrollmentServiceDeps {
  db: Pick<AppDatabase, 'withTenant'>;
  /** Install-namespace Secrets; absent when svc runs without a cluster. */
  secrets: SecretStore | undefined;
  /** The orchestrator's side; absent when svc runs without one. */
  cluster: EnrollmentCluster | undefined;
  now: () => Date;
}

/** The install-namespace bootstrap Secret's reference (tenant-creation.ts), and its tenant-namespace copy's. */
const INSTALL_REF = 'bootstrap';
const NAMESPACE_REF = 'component-bootstrap';

async function activeTenant(tx: TenantTx, id: string): Promise<Tenant> {
  const tenant = await findTenant(tx, id);
  if (!tenant) throw new TenantNotFoundError(id);
  if (tenant.state !== 'active')
    throw new InvalidStateError(
      `Agents enroll with the manager of an active tenant; this tenant is ${tenant.state}`,
      tenant.state,
    );
  return tenant;
}

export function createEnrollmentService(deps: EnrollmentServiceDeps) {
  function parts(): { secrets: SecretStore; cluster: EnrollmentCluster } {
    if (!deps.secrets || !deps.cluster)
      throw new TenancyUnavailableError('svc has no cluster access configured');
    return { secrets: deps.secrets, cluster: deps.cluster };
  }

  return {
    /**
     * GET …/enrollment: audited `tenant.enrollment.reveal` in the same transaction (the row
     * names the Secret and its version, never the password). The tenant must exist (404 first,
     * so a refusal tells nothing more) and be active.
     */
    reveal(identity: Identity, tenantId: string): Promise<EnrollmentView> {
      return deps.db.withTenant(tenantId, async (tx) => {
        const tenant = await activeTenant(tx, tenantId);
        const { secrets, cluster } = parts();
        const name = installSecretNames(tenantId).bootstrap;
        const password = (await secrets.read(name))?.[ENROLLMENT_PASSWORD_KEY];
        const caPem = await cluster.caPem(tenantId);
        if (!password || !caPem) throw new EnrollmentNotReadyError(tenantId);
        const manager = await cluster.endpoint(tenant);
        const version = (await secretVersion(tx, tenantId, INSTALL_REF)) ?? 1;
        await writeAudit(tx, {
          tenantId,
          actorPrincipal: 'User',
          actorId: identity.user_id,
          action: 'tenant.enrollment.reveal',
          resourceType: 'tenant_secret',
          resourceId: `${secrets.namespace}/${name}`,
          details: {
            key: ENROLLMENT_PASSWORD_KEY,
            secret_version: version,
            manager: manager.pending === null ? 'ready' : 'pending',
          },
          actingAs: identity.current_tenant,
        });
        const address = manager.addresses[0];
        return {
          tenantId,
          slug: tenant.slug,
          manager,
          password,
          secretVersion: version,
          caPem,
          agentVersion: AGENT_VERSION,
          commands:
            address === undefined
              ? null
              : installCommands({
                  slug: tenant.slug,
                  address,
                  ports: manager.ports,
                  password,
                  caPem,
                }),
        };
      });
    },

    /**
     * POST …:rotate-enrollment: a new password in both copies (the install namespace's, which
     * svc refills the tenant namespace from, and the tenant namespace's the manager mounts), a
     * new version of both references, and a new manager pod template: authd reads `authd.pass`
     * at start, so the restarted manager refuses the old password. Under the tenant's lock, so
     * the orchestrator does not copy the Secret meanwhile. Cluster writes go last; when one
     * fails, the ones made are put back and the transaction (audit row, versions) rolls back.
     */
    rotate(identity: Identity, tenantId: string): Promise<RotationResult> {
      return deps.db.withTenant(tenantId, async (tx) => {
        await lockTenantOrBusy(tx, tenantId);
        const tenant = await activeTenant(tx, tenantId);
        const { secrets, cluster } = parts();
        const name = installSecretNames(tenantId).bootstrap;
        const bundle = await secrets.read(name);
        const previous = bundle?.[ENROLLMENT_PASSWORD_KEY];
        if (!bundle || !previous) throw new EnrollmentNotReadyError(tenantId);
        const version = (await bumpSecretVersion(tx, tenantId, INSTALL_REF)) ?? 1;
        await bumpSecretVersion(tx, tenantId, NAMESPACE_REF);
        const rotatedAt = deps.now();
        await writeAudit(tx, {
          tenantId,
          actorPrincipal: 'User',
          actorId: identity.user_id,
          action: 'tenant.enrollment.rotate',
          resourceType: 'tenant_secret',
          resourceId: `${secrets.namespace}/${name}`,
          before: { secret_version: version - 1 },
          after: { secret_version: version },
          details: { key: ENROLLMENT_PASSWORD_KEY },
          actingAs: identity.current_tenant,
        });
        const password = randomBytes(24).toString('base64url');
        const labels = { 'tenant-id': tenantId };
        await cluster.writePassword(tenant, password);
        let managerRollout: RotationResult['managerRollout'];
        try {
          await secrets.replace(name, { ...bundle, [ENROLLMENT_PASSWORD_KEY]: password }, labels);
          managerRollout = await cluster.rollManager(tenant, version);
        } catch (error) {
          await Promise.allSettled([
            cluster.writePassword(tenant, previous),
            secrets.replace(name, bundle, labels),
          ]);
          throw error;
        }
        return { tenantId, secretVersion: version, rotatedAt, managerRollout };
      });
    },
  };
}

export type EnrollmentService = ReturnType<typeof createEnrollmentService>;
