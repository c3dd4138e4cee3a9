// The tenants domain: a tenant's record and the MSSP operations on it (spec §3.1, §4.2):
// creation, reads, decommission, retry, upgrade requests, impersonation and the fleet rollup.
import type { TenantConfig } from '../../../contracts/tenant-config.ts';
import type { Identity } from '../../auth/identity.ts';
import type { SecretStore } from '../../cluster/secrets.ts';
import type { UpgradeVerdict } from '../../db/compat.ts';
import type { KeysetRequest } from '../../db/keyset.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import type { TenantTx, Transaction } from '../../db/tenant-context.ts';
import { afterCommit } from '../../db/unit-of-work.ts';
import type { TokenService } from '../../tokens/index.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import type { ConfigChecks } from './tenant-config.ts';
import { createTenant } from './tenant-creation.ts';
import { isLive, type TenantState } from './tenant-lifecycle.ts';
import {
  countByState,
  findTenant,
  fleetTenants,
  listLifecycle,
  listTenants,
} from './tenant-repository.ts';
import { createTenantSuspension } from './tenant-suspension.ts';
import {
  type BootstrapCredentialIssuer,
  ChartVersionUnknownError,
  InvalidStateError,
  TenancyUnavailableError,
  type Tenant,
  TenantNotFoundError,
  type UpgradeRefusedError,
} from './tenant-types.ts';

/** What upgrades need from the orchestrator's side; absent when svc runs without one. */
export interface UpgradeDeps {
  systemVersion: string;
  catalog: { get(version: string): unknown; versions(): string[] };
}

/** An upgrade request's outcome: recorded (with the matrix verdict), or refused (audited). */
export type UpgradeOutcome =
  | {
      tenant: Tenant;
      verdict: Exclude<UpgradeVerdict, 'blocked' | 'out-of-range'>;
      warnings: string[];
    }
  | { refused: UpgradeRefusedError };

/**
 * The state transitions an MSSP request makes (decommission, retry, upgrade request), with
 * their rules. The provisioning service owns them (domains/provisioning provisioning-service.ts
 * `tenantTransitions`); they are injected because provisioning depends on this domain, not the
 * reverse. Each runs in the request's transaction, under the tenant's lock.
 */
export interface TenantTransitions {
  decommission(tx: TenantTx, identity: Identity, id: string, graceMs: number): Promise<Tenant>;
  retry(tx: TenantTx, identity: Identity, id: string): Promise<Tenant>;
  /** `:suspend` / `:resume`; returns the tenant as it was (the caller revokes or requeues). */
  suspension(
    tx: TenantTx,
    identity: Identity,
    id: string,
    trigger: 'suspend' | 'resume',
    details: { reason?: string },
  ): Promise<Tenant>;
  upgrade(
    tx: TenantTx,
    upgrades: UpgradeDeps,
    identity: Identity,
    id: string,
    target: string,
  ): Promise<UpgradeOutcome>;
}

export interface TenantServiceDeps {
  db: AppDatabase;
  system: SystemGate;
  tokens: Pick<TokenService, 'mintImpersonation'>;
  /** Secrets in the install namespace; absent when svc runs without a cluster. */
  secrets: SecretStore | undefined;
  checks: ConfigChecks;
  issueBootstrapCredential: BootstrapCredentialIssuer;
  decommissionGraceMs: number;
  upgrades: UpgradeDeps | undefined;
  transitions: TenantTransitions;
  /** Wakes the orchestrator: new work was just committed. */
  kick: () => void;
}

/** The tenant, read in any transaction; a tenant exists while its row does (tenant-repository.ts). */
async function requireTenant(tx: Transaction, id: string): Promise<Tenant> {
  const tenant = await findTenant(tx, id);
  if (!tenant) throw new TenantNotFoundError(id);
  return tenant;
}

export function createTenantService(deps: TenantServiceDeps) {
  const { db } = deps;
  const wakeOrchestrator = () => afterCommit(deps.kick);
  const get = (id: string) => db.withoutTenant((tx) => requireTenant(tx, id));

  async function create(config: TenantConfig, actor: Identity): Promise<Tenant> {
    const secrets = deps.secrets;
    if (!secrets) {
      throw new TenancyUnavailableError(
        'svc has no cluster access configured (KUBECONFIG or in-cluster)',
      );
    }
    const { issueBootstrapCredential, checks } = deps;
    const created = await createTenant(
      { db, secrets, checks, issueBootstrapCredential },
      config,
      actor,
    );
    wakeOrchestrator();
    return get(created.id);
  }

  return {
    get,

    create,

    list: (state: TenantState | undefined, page: KeysetRequest) =>
      db.withoutTenant((tx) => listTenants(tx, state, page)),

    /** The tenant with its lifecycle history, oldest first. */
    async getWithLifecycle(id: string) {
      const tenant = await get(id);
      const lifecycle = await db.withTenant(id, listLifecycle);
      return { tenant, lifecycle };
    },

    async decommission(identity: Identity, id: string): Promise<Tenant> {
      const tenant = await db.withTenant(id, (tx) =>
        deps.transitions.decommission(tx, identity, id, deps.decommissionGraceMs),
      );
      wakeOrchestrator();
      return tenant;
    },

    ...createTenantSuspension({ db, kick: deps.kick, transitions: deps.transitions }),

    /** Spec §3.1: a failed provisioning is retried from the step that failed. */
    async retry(identity: Identity, id: string): Promise<Tenant> {
      const tenant = await db.withTenant(id, (tx) => deps.transitions.retry(tx, identity, id));
      wakeOrchestrator();
      return tenant;
    },

    /** Records the request; the orchestrator upgrades the release. A refusal is audited. */
    async upgrade(identity: Identity, id: string, target: string) {
      const upgrades = deps.upgrades;
      if (!upgrades) throw new TenancyUnavailableError('svc runs without its orchestrator');
      if (!upgrades.catalog.get(target)) {
        throw new ChartVersionUnknownError(target, upgrades.catalog.versions());
      }
      const result = await db.withTenant(id, (tx) =>
        deps.transitions.upgrade(tx, upgrades, identity, id, target),
      );
      // Thrown after the scope, so the refusal's audit row is committed.
      if ('refused' in result) throw result.refused;
      wakeOrchestrator();
      return result;
    },

    /**
     * Spec §5.2: an MSSP user enters a tenant with a short token. Written in the tenant's
     * context with acting_as, so the tenant's customers see it (§9.5.5).
     */
    async impersonate(
      identity: Identity,
      tenantId: string,
      request: { reason: string; ttlSeconds?: number | undefined },
    ) {
      const tenant = await get(tenantId);
      if (!isLive(tenant)) {
        throw new InvalidStateError('A deleted tenant cannot be entered', tenant.state);
      }
      const minted = await deps.tokens.mintImpersonation({
        userId: identity.user_id,
        role: identity.role,
        tenantId,
        ...(request.ttlSeconds === undefined ? {} : { ttlSeconds: request.ttlSeconds }),
      });
      const expiresAt = new Date(minted.claims.exp * 1000);
      await db.withTenant(tenantId, (tx) =>
        writeAudit(tx, {
          tenantId,
          actorPrincipal: 'User',
          actorId: identity.user_id,
          action: 'user.impersonate',
          resourceType: 'tenant',
          resourceId: tenantId,
          actingAs: tenantId,
          details: {
            reason: request.reason,
            jti: minted.claims.jti,
            expires_at: expiresAt.toISOString(),
            role: identity.role,
          },
        }),
      );
      return { token: minted.token, expiresAt };
    },

    /** The cross-tenant rollup of the MSSP dashboard: the one read that bypasses RLS here. */
    fleetSummary: () =>
      deps.system.withSystem('fleet.summary', async (tx) => ({
        byState: await countByState(tx),
        tenants: await fleetTenants(tx),
      })),
  };
}

export type TenantService = ReturnType<typeof createTenantService>;
