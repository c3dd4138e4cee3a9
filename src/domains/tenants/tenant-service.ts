// The tenants domain: a tenant's record and the MSSP operations on it (spec §3.1, §4.2):
// creation, reads, decommission, retry, upgrade requests, impersonation and the fleet rollup.
import type { TenantConfig } from '../../../contracts/tenant-config.ts';
import type { Identity } from '../../auth/identity.ts';
import type { SecretStore } from '../../cluster/secrets.ts';
import { canUpgrade } from '../../db/compat.ts';
import type { KeysetRequest } from '../../db/keyset.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import type { TenantTx, Transaction } from '../../db/tenant-context.ts';
import { afterCommit } from '../../db/unit-of-work.ts';
import type { TokenService } from '../../tokens/index.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import type { ConfigChecks } from './tenant-config.ts';
import { createTenant } from './tenant-creation.ts';
import {
  IllegalTransitionError,
  isLive,
  lockTenantOrBusy,
  type TenantState,
  transition,
  transitionFor,
} from './tenant-lifecycle.ts';
import {
  clearProvisioningError,
  countByState,
  findTenant,
  fleetTenants,
  insertLifecycleEvent,
  listLifecycle,
  listTenants,
  setDecommissionAt,
  setUpgradeTarget,
} from './tenant-repository.ts';
import { createTenantSuspension } from './tenant-suspension.ts';
import {
  type BootstrapCredentialIssuer,
  ChartVersionUnknownError,
  InvalidStateError,
  TenancyUnavailableError,
  type Tenant,
  TenantNotFoundError,
  type UpgradeFacts,
  UpgradeInProgressError,
  UpgradeRefusedError,
} from './tenant-types.ts';

/** What upgrades need from the orchestrator's side; absent when svc runs without one. */
export interface UpgradeDeps {
  systemVersion: string;
  catalog: { get(version: string): unknown; versions(): string[] };
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
  /** Wakes the orchestrator: new work was just committed. */
  kick: () => void;
}

const userActor = (identity: Identity) => `user:${identity.user_id}`;

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

  async function decommissionIn(tx: TenantTx, identity: Identity, id: string): Promise<Tenant> {
    // What no state allows is refused at once; a transition that may happen is made under
    // the tenant's lock, from the state read there (issue 18 item 5).
    const seen = await requireTenant(tx, id);
    if (!transitionFor('decommission', seen.state)) {
      throw new IllegalTransitionError(id, seen.state, 'decommission');
    }
    await lockTenantOrBusy(tx, id);
    const before = await requireTenant(tx, id);
    // A tenant that never became active holds no customer data: no grace period.
    const neverActive = before.state === 'pending' || before.state === 'provisioning';
    const grace = neverActive ? 0 : deps.decommissionGraceMs;
    const moved = await transition(tx, {
      tenantId: id,
      trigger: 'decommission',
      from: before.state,
      actor: userActor(identity),
      details: {
        grace_period_seconds: grace / 1000,
        ...(before.upgrade_target === null ? {} : { abandoned_upgrade: before.upgrade_target }),
      },
    });
    const graceEndsAt = new Date(moved.stateChangedAt.getTime() + grace);
    await setDecommissionAt(tx, id, graceEndsAt);
    const after = await requireTenant(tx, id);
    await writeAudit(tx, {
      tenantId: id,
      actorPrincipal: 'User',
      actorId: identity.user_id,
      action: 'tenant.decommission',
      details: { grace_period_ends_at: graceEndsAt.toISOString(), never_active: neverActive },
      resourceType: 'tenant',
      resourceId: id,
      before: { state: before.state },
      after: { state: after.state },
      actingAs: identity.current_tenant,
    });
    return after;
  }

  async function retryIn(tx: TenantTx, identity: Identity, id: string): Promise<Tenant> {
    const seen = await requireTenant(tx, id);
    // Not failed (still in progress, or past pending): refused without waiting for the lock.
    if (seen.state === 'pending' && seen.error_details !== null) await lockTenantOrBusy(tx, id);
    const before = await requireTenant(tx, id);
    const after = await clearProvisioningError(tx, id);
    if (!after) {
      throw new InvalidStateError(
        before.state === 'pending'
          ? 'Provisioning has not failed; it is still in progress'
          : `Only a pending tenant whose provisioning failed can be retried; this one is ${before.state}`,
        before.state,
      );
    }
    await insertLifecycleEvent(tx, id, {
      kind: 'step',
      step: 'retry_requested',
      actor: userActor(identity),
      details: { previous_error: before.error_details },
    });
    await writeAudit(tx, {
      tenantId: id,
      actorPrincipal: 'User',
      actorId: identity.user_id,
      action: 'tenant.provision.retry',
      resourceType: 'tenant',
      resourceId: id,
      before: { state: before.state, error_details: before.error_details },
      after: { state: after.state, error_details: null },
    });
    return after;
  }

  /** Only an active tenant without a running upgrade may start one. */
  function checkUpgradable(tenant: Tenant): void {
    if (tenant.state !== 'active') {
      throw new InvalidStateError(
        `Only an active tenant can be upgraded; this one is ${tenant.state}`,
        tenant.state,
      );
    }
    if (tenant.upgrade_target !== null) throw new UpgradeInProgressError(tenant.upgrade_target);
  }

  async function upgradeIn(
    tx: TenantTx,
    upgrades: UpgradeDeps,
    identity: Identity,
    id: string,
    target: string,
  ) {
    const seen = await requireTenant(tx, id);
    // Only an upgradable tenant is worth the lock; the check below refuses the rest from the
    // state read under it.
    if (seen.state === 'active' && seen.upgrade_target === null) await lockTenantOrBusy(tx, id);
    const before = await requireTenant(tx, id);
    checkUpgradable(before);
    const verdict = await canUpgrade(tx, upgrades.systemVersion, target);
    const facts: UpgradeFacts = {
      system_version: upgrades.systemVersion,
      tenant_chart_version: target,
      from: before.chart_version,
      compatibility: verdict,
    };
    const audit = { tenantId: id, actorPrincipal: 'User', actorId: identity.user_id } as const;
    const subject = { resourceType: 'tenant', resourceId: id } as const;
    if (verdict === 'blocked' || verdict === 'out-of-range') {
      await writeAudit(tx, {
        ...audit,
        ...subject,
        action: 'tenant.upgrade.refuse',
        details: { ...facts },
      });
      return { refused: new UpgradeRefusedError(verdict, facts) } as const;
    }
    const warnings =
      verdict === 'deprecated'
        ? [
            `svc ${upgrades.systemVersion} with tenant package ${target} is deprecated; plan a move to a supported version`,
          ]
        : [];
    const after = await setUpgradeTarget(tx, id, target);
    if (!after) throw new InvalidStateError('The tenant changed meanwhile');
    await insertLifecycleEvent(tx, id, {
      kind: 'step',
      step: 'upgrade_requested',
      actor: userActor(identity),
      details: { ...facts, warnings },
    });
    await writeAudit(tx, {
      ...audit,
      ...subject,
      action: 'tenant.upgrade',
      before: { chart_version: before.chart_version },
      after: { upgrade_target: target },
      details: { ...facts, warnings },
    });
    return { tenant: after, verdict, warnings };
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
      const tenant = await db.withTenant(id, (tx) => decommissionIn(tx, identity, id));
      wakeOrchestrator();
      return tenant;
    },

    ...createTenantSuspension({ db, kick: deps.kick }),

    /** Spec §3.1: a failed provisioning is retried from the step that failed. */
    async retry(identity: Identity, id: string): Promise<Tenant> {
      const tenant = await db.withTenant(id, (tx) => retryIn(tx, identity, id));
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
      const result = await db.withTenant(id, (tx) => upgradeIn(tx, upgrades, identity, id, target));
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
