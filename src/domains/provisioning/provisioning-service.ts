import type pg from 'pg';
import type { Identity } from '../../auth/identity.ts';
import type { SecretStore } from '../../cluster/secrets.ts';
import { canUpgrade } from '../../db/compat.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import {
  completeConfigTarget,
  dropConfigTarget,
  replaceIntegrations,
  secretRefId,
} from '../tenants/config-revision-repository.ts';
import { type DataPlane, findDataPlane, setDataPlane } from '../tenants/suspension-repository.ts';
import { upsertSecretRef } from '../tenants/tenant-config-repository.ts';
import { restoreBootstrapSecret } from '../tenants/tenant-creation.ts';
import {
  IllegalTransitionError,
  lockTenantOrBusy,
  TENANT_LOCK_KEY,
  tenantLockName,
  transition,
  transitionFor,
  tryTransition,
} from '../tenants/tenant-lifecycle.ts';
import {
  clearProvisioningError,
  findTenant,
  insertLifecycleEvent,
  setDecommissionAt,
  setUpgradeTarget,
} from '../tenants/tenant-repository.ts';
import type { TenantTransitions, UpgradeDeps } from '../tenants/tenant-service.ts';
import {
  type BootstrapCredentialIssuer,
  InvalidStateError,
  type StoredConfig,
  type Tenant,
  TenantNotFoundError,
  type UpgradeFacts,
  UpgradeInProgressError,
  UpgradeRefusedError,
} from '../tenants/tenant-types.ts';
import { AlreadyAtVersionError } from './provisioning-errors.ts';
import {
  adapterTokenRef,
  allocateEdgePortPair,
  completeUpgrade,
  configRevisionDetails,
  deleteTenantRows,
  dropUpgradeTarget,
  dueWork,
  edgeProxyTenants,
  ensureOrganization,
  existingTenantIds,
  heartbeatBeforeReady,
  lockDrift,
  lockSoftDeleted,
  type OrganizationRow,
  reconcilableTenantIds,
  releaseEdgePortPair,
  renameOrganization,
  type SessionLock,
  secretRefNames,
  sessionUnlock,
  setChartVersion,
  setDrift,
  setErrorDetails,
  supportedChartVersions,
  tokenHoldingTenantIds,
  trySessionLock,
} from './provisioning-repository.ts';
import { completedSteps, recordError, recordStep } from './provisioning-steps.ts';
import {
  type Drift,
  type DriftFinding,
  type EdgePorts,
  type FailureRecord,
  type MarkerStep,
  ORCHESTRATOR_ACTOR,
  PROVISIONING_STEPS,
  type ProvisioningStep,
  type RolloutOutcome,
  type ScaledWorkload,
} from './provisioning-types.ts';

/**
 * The provisioning domain (docs/orchestrator.md "Provisioning service"): every tenant state
 * transition the orchestrator makes and the rule that goes with it — a step recorded once
 * done, a failure rolled back and kept for the retry, readiness and the heartbeat activating
 * the tenant, an upgrade or configuration change completed by compare-and-set, suspension's
 * data-plane marker, the soft delete and the purge, drift kept once per distinct finding. The
 * orchestrator keeps the loop, the locks and the cluster calls and comes here for the rest;
 * each method is the one transaction the orchestrator made before, so no step gains a round
 * trip. The state machine itself is the tenant's (tenants/tenant-lifecycle.ts TRANSITIONS),
 * shared with the API's transitions; this service is its only caller on the orchestrator side.
 */
export interface ProvisioningServiceDeps {
  db: AppDatabase;
  system: SystemGate;
  /** Re-issues a lost bootstrap Secret's adapter credential (domains/adapter). */
  issueBootstrapCredential: BootstrapCredentialIssuer;
}

const actor = ORCHESTRATOR_ACTOR;

const audit = (tenantId: string) =>
  ({
    tenantId,
    actorPrincipal: 'System',
    actorId: ORCHESTRATOR_ACTOR,
    resourceType: 'tenant',
    resourceId: tenantId,
  }) as const;

/** The configuration of `revision`, by default the applied one (release.ts storedConfig). */
async function storedConfigIn(
  tx: TenantTx,
  tenantId: string,
  revision?: number,
): Promise<StoredConfig> {
  const config = (await configRevisionDetails(tx, tenantId, revision))?.config;
  if (!config)
    throw new Error(`tenant ${tenantId} has no configuration revision ${revision ?? ''}`);
  return config as StoredConfig;
}

/**
 * Spec §3.1 row 3 with the heartbeat first: the adapter was heard from during this
 * provisioning attempt (`heartbeat_before_ready`), so recording readiness activates the tenant.
 * The caller holds the tenant's lock and has recorded `package_ready`.
 */
async function activateFromNotedHeartbeat(tx: TenantTx, tenant: Tenant): Promise<boolean> {
  const beat = await heartbeatBeforeReady(tx, tenant.id, tenant.state_changed_at);
  if (!beat) return false;
  const moved = await tryTransition(tx, {
    tenantId: tenant.id,
    trigger: 'adapter_heartbeat',
    actor: 'adapter',
    details: {
      adapter_version: beat.details.adapter_version,
      heartbeat_at: beat.occurred_at.toISOString(),
      completed_by: 'package_ready',
    },
  });
  if (!moved) return false;
  await writeAudit(tx, {
    ...audit(tenant.id),
    action: 'tenant.activate',
    before: { state: 'provisioning' },
    after: { state: 'active' },
    details: { adapter_version: beat.details.adapter_version },
  });
  return true;
}

/**
 * The svc-side rows an applied revision defines: its integrations (the adapter's list), with
 * the reference of the integrations Secret for each item holding a credential.
 */
async function applyRows(tx: TenantTx, tenantId: string, config: StoredConfig): Promise<void> {
  const items = config.integrations?.items ?? [];
  const secretId = items.some((i) => i.has_credential)
    ? ((await secretRefId(tx, tenantId, 'integrations')) ?? null)
    : null;
  await replaceIntegrations(
    tx,
    tenantId,
    items.map((i) => ({
      kind: i.kind,
      name: i.name,
      endpoint_url: i.endpoint_url ?? null,
      settings: i.settings ?? {},
      thresholds: i.thresholds ?? {},
      secret_id: i.has_credential ? secretId : null,
    })),
  );
}

/** What makes two passes' findings the same drift (the detail text may vary). */
function signature(findings: readonly DriftFinding[]): string {
  return JSON.stringify(findings.map((f) => [f.object, f.name, f.problem, f.repair]));
}

export function createProvisioningService(deps: ProvisioningServiceDeps) {
  const { db } = deps;
  const inTenant = <T>(tenantId: string, fn: (tx: TenantTx) => Promise<T>) =>
    db.withTenant(tenantId, fn);

  return {
    // --- what the loop selects -----------------------------------------------------------

    /** Every tenant with orchestrator work due at `now`, oldest state change first. */
    dueWork: (input: { now: Date; graceMs: number; retentionMs: number }) =>
      db.withoutTenant((tx) => dueWork(tx, input)),
    reconcilableTenantIds: () => db.withoutTenant(reconcilableTenantIds),
    tokenHoldingTenantIds: () => db.withoutTenant(tokenHoldingTenantIds),
    existingTenantIds: (ids: string[]) => db.withoutTenant((tx) => existingTenantIds(tx, ids)),
    edgeProxyTenants: () => db.withoutTenant(edgeProxyTenants),
    supportedChartVersions: (systemVersion: string) =>
      db.withoutTenant((tx) => supportedChartVersions(tx, systemVersion)),
    /** Lowest free pair; a 23505 means another allocation won the pair (the caller retries). */
    allocateEdgePortPair: (tenantId: string, maxPair: number) =>
      db.withoutTenant((tx) => allocateEdgePortPair(tx, tenantId, maxPair)),

    // --- reads of one tenant -------------------------------------------------------------

    find: (tenantId: string) => db.withoutTenant((tx) => findTenant(tx, tenantId)),
    completedSteps: (tenantId: string) => inTenant(tenantId, (tx) => completedSteps(tx, tenantId)),
    storedConfig: (tenantId: string, revision?: number) =>
      inTenant(tenantId, (tx) => storedConfigIn(tx, tenantId, revision)),
    /** The configuration to render and the edge ports allocated so far, in one transaction. */
    renderInputs: (tenantId: string, revision?: number) =>
      inTenant(tenantId, async (tx) => ({
        config: await storedConfigIn(tx, tenantId, revision),
        ports: (await completedSteps(tx, tenantId)).get('edge_ports_allocated')?.details.ports as
          | EdgePorts
          | null
          | undefined,
      })),
    /** What the reconciler checks: the install Secrets on record, and whether svc made the namespace. */
    reconcileFacts: (tenantId: string, secretsNamespace: string) =>
      inTenant(tenantId, async (tx) => ({
        refs: await secretRefNames(tx, tenantId, secretsNamespace),
        createdNamespace: (await completedSteps(tx, tenantId)).has('namespace_created'),
      })),
    adapterTokenRef: (tenantId: string) =>
      inTenant(tenantId, (tx) => adapterTokenRef(tx, tenantId)),

    // --- provisioning steps --------------------------------------------------------------

    recordStep: (
      tenantId: string,
      step: ProvisioningStep | MarkerStep,
      details: Record<string, unknown> = {},
    ) => inTenant(tenantId, (tx) => recordStep(tx, tenantId, step, actor, details)),

    /** References (namespace, name) of Secrets svc wrote for the tenant; never their values. */
    recordSecretRefs: (
      tenantId: string,
      namespace: string,
      refs: ReadonlyArray<{ purpose: string; name: string }>,
    ) =>
      inTenant(tenantId, async (tx) => {
        for (const { purpose, name } of refs) {
          await upsertSecretRef(tx, { tenant_id: tenantId, purpose, namespace, name });
        }
      }),

    /** tenant-creation.ts restoreBootstrapSecret with this service's database. */
    restoreBootstrapSecret: (secrets: SecretStore, tenantId: string) =>
      restoreBootstrapSecret(
        { db, secrets, issueBootstrapCredential: deps.issueBootstrapCredential },
        tenantId,
      ),

    /** Spec §9.4 items 6–7 done: the package is in, the tenant moves to `provisioning` (§3.1 row 2). */
    recordInstalled: (
      tenantId: string,
      installed: { namespace: string; release: string; version: string; revision?: number },
    ) =>
      inTenant(tenantId, async (tx) => {
        const { namespace, release, version, revision } = installed;
        await recordStep(tx, tenantId, 'package_installed', actor, {
          namespace,
          release,
          chart_version: version,
          revision,
        });
        await setChartVersion(tx, tenantId, version);
        await transition(tx, {
          tenantId,
          trigger: 'package_installed',
          actor,
          details: { chart_version: version, namespace },
        });
        await writeAudit(tx, {
          ...audit(tenantId),
          action: 'tenant.provision',
          before: { state: 'pending' },
          after: { state: 'provisioning', chart_version: version },
        });
      }),

    /**
     * Spec §3.1 row 4 and §7: a failed attempt, rolled back (`rollback` says what the cluster
     * side did), is kept on the tenant, which goes back to (or stays) pending for a retry.
     */
    recordProvisioningFailure: (
      tenant: Tenant,
      failure: FailureRecord,
      rollback: Record<string, string>,
      failedAt: Date,
    ) =>
      inTenant(tenant.id, async (tx) => {
        const errorDetails = {
          step: failure.step,
          code: failure.code,
          message: failure.message,
          ...failure.details,
          rollback,
          failed_at: failedAt.toISOString(),
        };
        const undone = PROVISIONING_STEPS.filter((s) => s !== 'install_secrets_written');
        await recordStep(tx, tenant.id, 'rolled_back', actor, { undone, ...rollback });
        await recordError(tx, tenant.id, failure.step, actor, errorDetails);
        const moved = await tryTransition(tx, {
          tenantId: tenant.id,
          trigger: 'provisioning_failed',
          actor,
          details: { code: failure.code },
          errorDetails,
        });
        // Failed before leaving pending: no transition, but the error is kept all the same.
        if (!moved) await setErrorDetails(tx, tenant.id, 'pending', errorDetails);
        await writeAudit(tx, {
          ...audit(tenant.id),
          action: 'tenant.provision.fail',
          before: { state: tenant.state },
          after: { state: 'pending' },
          details: { step: failure.step, code: failure.code, rollback },
        });
      }),

    /**
     * Records readiness; if the adapter has already been heard from while provisioning, its
     * heartbeat completes the activation now (spec §3.1 row 3 needs both).
     */
    markReady: (tenant: Tenant, counts: { workloads: number; volumes: number }) =>
      inTenant(tenant.id, async (tx) => {
        await recordStep(tx, tenant.id, 'package_ready', actor, counts);
        await activateFromNotedHeartbeat(tx, tenant);
      }),

    /** A heartbeat that found the tenant locked was noted instead of activating: complete it. */
    activateFromNotedHeartbeat: (tenant: Tenant) =>
      inTenant(tenant.id, (tx) => activateFromNotedHeartbeat(tx, tenant)),

    // --- upgrades and configuration changes ----------------------------------------------

    /**
     * The orchestrator's half of an upgrade, once rolled out: compare-and-set on the target this
     * run started from (only the upgrade still asked for, on a tenant still active, writes the
     * chart version), the outcome in the lifecycle and the audit trail.
     */
    finishUpgrade: (tenant: Tenant, target: string, outcome: RolloutOutcome) =>
      inTenant(tenant.id, async (tx) => {
        const from = tenant.chart_version;
        if (outcome.ok) {
          await completeUpgrade(tx, tenant.id, target);
          await recordStep(tx, tenant.id, 'upgraded', actor, { from, to: target });
        } else {
          await dropUpgradeTarget(tx, tenant.id, target);
          await recordStep(tx, tenant.id, 'upgrade_failed', actor, {
            from,
            to: target,
            error: outcome.error,
            rolled_back_to_revision: outcome.rolledBackTo,
          });
        }
        await writeAudit(tx, {
          ...audit(tenant.id),
          action: outcome.ok ? 'tenant.upgrade.complete' : 'tenant.upgrade.fail',
          before: { chart_version: from },
          after: { chart_version: outcome.ok ? target : from },
          details: outcome.ok ? {} : { error: outcome.error },
        });
      }),

    /**
     * A configuration change rolled out: success makes `target` the applied revision (and its
     * rows), failure drops the target; the tenant row follows by compare-and-set.
     */
    finishConfigChange: (
      tenant: Tenant,
      change: { from: number; target: number; config: StoredConfig },
      outcome: RolloutOutcome,
    ) =>
      inTenant(tenant.id, async (tx) => {
        const { from, target, config } = change;
        if (outcome.ok) {
          if (
            await completeConfigTarget(tx, tenant.id, { target, displayName: config.display_name })
          )
            await applyRows(tx, tenant.id, config);
          await recordStep(tx, tenant.id, 'config_applied', actor, { revision: target, from });
        } else {
          await dropConfigTarget(tx, tenant.id, target);
          await recordStep(tx, tenant.id, 'config_failed', actor, {
            revision: target,
            from,
            error: outcome.error,
            rolled_back_to_revision: outcome.rolledBackTo,
          });
        }
        await writeAudit(tx, {
          ...audit(tenant.id),
          action: outcome.ok ? 'tenant.config.apply' : 'tenant.config.fail',
          before: { config_revision: from },
          after: { config_revision: outcome.ok ? target : from },
          details: outcome.ok
            ? { revision: target }
            : {
                revision: target,
                error: outcome.error,
                rolled_back_to_revision: outcome.rolledBackTo,
              },
        });
      }),

    // --- suspension ----------------------------------------------------------------------

    /** `stopping` is recorded before the first workload changes (a crash is picked up again). */
    beginSuspension: (tenantId: string) =>
      db.withoutTenant((tx) => setDataPlane(tx, tenantId, 'stopping')),

    /**
     * Records the data plane's outcome only while the tenant is still in the state the work was
     * for: a suspension resumed meanwhile (or the reverse) leaves the marker for the next pass.
     */
    finishDataPlane: (
      tenantId: string,
      outcome: {
        state: 'suspended' | 'active';
        dataPlane: DataPlane;
        step: 'data_plane_suspended' | 'data_plane_resumed';
        workloads: ScaledWorkload[];
      },
    ) =>
      inTenant(tenantId, async (tx) => {
        const tenant = await findTenant(tx, tenantId);
        if (
          tenant?.state !== outcome.state ||
          (await findDataPlane(tx, tenantId)) === outcome.dataPlane
        )
          return;
        await setDataPlane(tx, tenantId, outcome.dataPlane);
        await recordStep(tx, tenantId, outcome.step, actor, { workloads: outcome.workloads });
      }),

    /** Spec §5.2/§8: the adapter token's Secret was rewritten; its reference moves on a version. */
    recordAdapterToken: (
      tenantId: string,
      written: { namespace: string; name: string; expiresAt: Date; version: number },
    ) =>
      inTenant(tenantId, async (tx) => {
        const { namespace, name } = written;
        await upsertSecretRef(tx, {
          tenant_id: tenantId,
          purpose: 'adapter-token',
          namespace,
          name,
        });
        await recordStep(tx, tenantId, 'adapter_token_written', actor, {
          namespace,
          expires_at: written.expiresAt.toISOString(),
          version: written.version,
        });
      }),

    // --- decommission, soft delete and purge ----------------------------------------------

    /**
     * Spec §3.1 row 6: the cluster objects are gone; the port pair is released and the tenant
     * soft-deleted (its rows wait for the purge).
     */
    recordSoftDelete: (
      tenant: Tenant,
      removed: { removed_secrets: string[] } & Record<string, unknown>,
      place: { namespace: string; release: string; retentionEndsAt: Date },
    ) =>
      inTenant(tenant.id, async (tx) => {
        const { namespace, release, retentionEndsAt } = place;
        await recordStep(tx, tenant.id, 'decommissioned', actor, {
          namespace,
          release,
          ...removed,
        });
        await releaseEdgePortPair(tx, tenant.id);
        const moved = await tryTransition(tx, {
          tenantId: tenant.id,
          trigger: 'grace_period_ended',
          actor,
          details: { namespace, retention_ends_at: retentionEndsAt.toISOString() },
          errorDetails: null,
        });
        if (!moved) return;
        await writeAudit(tx, {
          ...audit(tenant.id),
          action: 'tenant.soft_delete',
          before: { state: 'decommissioning' },
          after: { state: 'soft-deleted' },
          details: { namespace, removed_secrets: removed.removed_secrets },
        });
      }),

    /** Why the decommission cannot finish, on the tenant and in the lifecycle (→ event stream). */
    recordDecommissionStall: (
      tenantId: string,
      errorDetails: Record<string, unknown> & { step: string },
    ) =>
      inTenant(tenantId, async (tx) => {
        await setErrorDetails(tx, tenantId, 'decommissioning', errorDetails);
        await recordError(tx, tenantId, errorDetails.step, actor, errorDetails);
      }),

    /**
     * Spec §3.1 last row: after the retention window the tenant and all its rows are removed.
     * This crosses every tenant table at once, so it runs through the System gate (audited entry)
     * and writes its own audit row, which keeps the tenant's id.
     */
    purge: (tenantId: string) =>
      deps.system.withSystem('tenant.purge', async (tx) => {
        const tenant = await lockSoftDeleted(tx, tenantId);
        if (!tenant) return;
        const removed = await deleteTenantRows(tx, tenantId);
        await writeAudit(tx, {
          ...audit(tenantId),
          action: 'tenant.purge',
          before: {
            state: 'soft-deleted',
            slug: tenant.slug,
            deleted_at: tenant.deleted_at.toISOString(),
          },
          after: null,
          details: { removed },
        });
      }),

    // --- drift ---------------------------------------------------------------------------

    /**
     * Stores the finding on the tenant (`drift`, shown by the API) and writes a `drift` lifecycle
     * event (→ the tenant's event stream) when it changed (new drift, different drift, the
     * cluster matching again: `findings: []`) or when svc repaired something. An unchanged,
     * unrepaired finding writes nothing, so a drift nobody fixes does not flood the stream.
     * `changed` is false then; `previous` is what was stored before.
     */
    recordDrift: (tenant: Tenant, findings: DriftFinding[], detectedAt: Date) =>
      inTenant(tenant.id, async (tx) => {
        const stored = (await lockDrift(tx, tenant.id)) as Drift | null;
        const previous = stored?.findings ?? [];
        const repaired = findings.some(
          (f) => f.repair === 'recreated' || f.repair === 'reinstalled',
        );
        if (!repaired && signature(previous) === signature(findings)) {
          return { drift: stored, changed: false, previous };
        }
        const drift =
          findings.length === 0 ? null : { detected_at: detectedAt.toISOString(), findings };
        await setDrift(tx, tenant.id, drift);
        await insertLifecycleEvent(tx, tenant.id, {
          kind: 'drift',
          actor,
          details: { state: tenant.state, findings, resolved: findings.length === 0 },
        });
        return { drift, changed: true, previous };
      }),
  };
}

export type ProvisioningService = ReturnType<typeof createProvisioningService>;

// --- the orchestrator's own connections -----------------------------------------------------

const tenantSessionLock = (tenantId: string): SessionLock => ({
  key: TENANT_LOCK_KEY,
  name: tenantLockName(tenantId),
});

/**
 * The tenant's lock held by a session (orchestrator/tenant-locks.ts, on a connection it owns):
 * the same key the API and the heartbeat take per transaction (tenant-lifecycle.ts lockTenant).
 */
export const tenantSessionLocks = {
  tryLock: (client: pg.ClientBase, tenantId: string) =>
    trySessionLock(client, tenantSessionLock(tenantId)),
  unlock: (client: pg.ClientBase, tenantId: string) =>
    sessionUnlock(client, tenantSessionLock(tenantId)),
};

/** Spec §2.9 install.*: the organization row, read and written as svc_admin (orchestrator/install.ts). */
export const installRecord = {
  ensure: ensureOrganization,
  rename: renameOrganization,
};
export type { OrganizationRow };

// --- the transitions an MSSP request makes (tenant-service.ts TenantTransitions) --------------

const userActor = (identity: Identity) => `user:${identity.user_id}`;

async function requireTenant(tx: TenantTx, id: string): Promise<Tenant> {
  const tenant = await findTenant(tx, id);
  if (!tenant) throw new TenantNotFoundError(id);
  return tenant;
}

/**
 * Spec §3.1 rows 5–6, and a tenant that never became active (docs/orchestrator.md
 * "Decommission and purge"). What no state allows is refused at once; a transition that may
 * happen is made under the tenant's lock, from the state read there. A pending tenant whose
 * provisioning failed is accepted whatever the failure, `namespace_conflict` included: its
 * error stays on record, and the orchestrator's decommission never touches a `tenant-<slug>`
 * that does not carry svc's labels for it (orchestrator/decommission.ts), so removing the
 * tenant cannot harm the namespace it collided with.
 */
async function decommission(
  tx: TenantTx,
  identity: Identity,
  id: string,
  graceMs: number,
): Promise<Tenant> {
  const seen = await requireTenant(tx, id);
  if (!transitionFor('decommission', seen.state)) {
    throw new IllegalTransitionError(id, seen.state, 'decommission');
  }
  await lockTenantOrBusy(tx, id);
  const before = await requireTenant(tx, id);
  // A tenant that never became active holds no customer data: no grace period.
  const neverActive = before.state === 'pending' || before.state === 'provisioning';
  const grace = neverActive ? 0 : graceMs;
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

/** Spec §3.1: a failed provisioning is retried from the step that failed. */
async function retry(tx: TenantTx, identity: Identity, id: string): Promise<Tenant> {
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

/**
 * Spec §3.1 last paragraph: only an active tenant without a running upgrade may start one, and
 * only to a version it does not already run. Read under the tenant's lock, so of two requests
 * racing for the same tenant one records its target and the other finds it (409
 * `upgrade_in_progress`), finds the orchestrator at work (409 `tenant_busy`) or, when the
 * first upgrade has already completed, finds the tenant at that version (409
 * `already_at_version`): never two 202s for one move.
 */
function checkUpgradable(tenant: Tenant, target: string): void {
  if (tenant.state !== 'active') {
    throw new InvalidStateError(
      `Only an active tenant can be upgraded; this one is ${tenant.state}`,
      tenant.state,
    );
  }
  if (tenant.upgrade_target !== null) throw new UpgradeInProgressError(tenant.upgrade_target);
  if (tenant.chart_version === target) throw new AlreadyAtVersionError(target);
}

/** Records the request; the orchestrator upgrades the release. A matrix refusal is audited. */
async function upgrade(
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
  checkUpgradable(before, target);
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

/** Refuses what no state allows without waiting for the lock (as decommission does). */
function checkSuspension(tenant: Tenant, trigger: 'suspend' | 'resume'): void {
  if (!transitionFor(trigger, tenant.state)) {
    throw new IllegalTransitionError(tenant.id, tenant.state, trigger);
  }
  // helm would restore every replica count the suspension took away: the upgrade goes first.
  if (trigger === 'suspend' && tenant.upgrade_target !== null) {
    throw new UpgradeInProgressError(tenant.upgrade_target);
  }
}

/**
 * Suspension (docs/orchestrator.md "Suspension"): active ⇄ suspended, checked again under the
 * tenant's lock. The data plane follows in the orchestrator (beginSuspension, finishDataPlane).
 */
async function suspension(
  tx: TenantTx,
  identity: Identity,
  id: string,
  trigger: 'suspend' | 'resume',
  details: { reason?: string },
): Promise<Tenant> {
  checkSuspension(await requireTenant(tx, id), trigger);
  await lockTenantOrBusy(tx, id);
  const before = await requireTenant(tx, id);
  checkSuspension(before, trigger);
  await transition(tx, {
    tenantId: id,
    trigger,
    from: before.state,
    actor: userActor(identity),
    details,
  });
  return before;
}

/**
 * Spec §3.1 row 3 with the package Ready first: the adapter's heartbeat activates the tenant
 * (adapter-service.ts checked `package_ready` under the tenant's lock). A conditional UPDATE, so
 * two first heartbeats racing each other move the tenant exactly once.
 */
export async function activateOnHeartbeat(
  tx: TenantTx,
  tenantId: string,
  adapterVersion: string,
): Promise<boolean> {
  const moved = await tryTransition(tx, {
    tenantId,
    trigger: 'adapter_heartbeat',
    actor: 'adapter',
    details: { adapter_version: adapterVersion },
  });
  return moved !== undefined;
}

/** The API's transitions, injected into the tenant service (compose.ts). */
export const tenantTransitions: TenantTransitions = { decommission, retry, upgrade, suspension };
