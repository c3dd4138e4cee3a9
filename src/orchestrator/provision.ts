import { setTimeout as sleep } from 'node:timers/promises';
import { HelmError } from '../cluster/helm.ts';
import {
  NamespaceConflictError,
  NamespaceTerminatingError,
  readinessReport,
  SERVICE_IDENTITY_BINDING,
} from '../cluster/namespaces.ts';
import type { Transaction } from '../db/tenant-context.ts';
import { ADAPTER_BOOTSTRAP_SECRET } from '../domains/adapter/index.ts';
import { writeAudit } from '../domains/audit/audit-repository.ts';
import { installSecretNames, restoreBootstrapSecret } from '../domains/tenants/tenant-creation.ts';
import {
  type TenantState,
  transition,
  tryTransition,
} from '../domains/tenants/tenant-lifecycle.ts';
import { ORCHESTRATOR_ACTOR, type OrchestratorDeps, tenantClusterRole } from './context.ts';
import {
  ADAPTER_TOKEN_SECRET,
  COMPONENT_BOOTSTRAP_SECRET,
  namespaceLabels,
  namespaceOf,
  RenderError,
  renderTenantValues,
  type StoredConfig,
} from './render.ts';
import {
  completedSteps,
  nextStep,
  PROVISIONING_STEPS,
  type ProvisioningStep,
  recordStep,
} from './steps.ts';

export const RELEASE_NAME = 'svc-tenant';

/**
 * svc holds no rights inside a namespace until it binds its tenant ClusterRole there
 * (charts/svc-system/templates/rbac.yaml). Returns once RBAC applies the binding, so the next
 * call never meets a transient 403. Idempotent: every operation on an existing tenant namespace
 * calls it first, which also repairs a binding someone removed. Deleting the namespace deletes it.
 */
export function bindServiceIdentity(deps: OrchestratorDeps, namespace: string) {
  return deps.namespaces.bindServiceIdentity(namespace, {
    serviceAccount: deps.install.serviceAccount,
    installNamespace: deps.install.namespace,
    clusterRole: tenantClusterRole(deps.install),
  });
}

export interface TenantRecord {
  id: string;
  slug: string;
  display_name: string;
  state: TenantState;
  error_details: Record<string, unknown> | null;
  state_changed_at: Date;
  deleted_at: Date | null;
  chart_version: string | null;
  upgrade_target: string | null;
  edge_port_pair: number | null;
}

const TENANT_COLUMNS = `id, slug, display_name, state, error_details, state_changed_at, deleted_at,
  chart_version, upgrade_target, edge_port_pair`;

export async function loadTenant(tx: Transaction, id: string): Promise<TenantRecord | undefined> {
  const { rows } = await tx.query<TenantRecord>(
    `SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = $1`,
    [id],
  );
  return rows[0];
}

/** The newest configuration revision (tenants/create.ts stores it secret-free). */
export async function latestConfig(tx: Transaction, tenantId: string): Promise<StoredConfig> {
  const { rows } = await tx.query<{ details: { config: StoredConfig } }>(
    `SELECT details FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND kind = 'config_revision' ORDER BY config_revision DESC, id DESC LIMIT 1`,
    [tenantId],
  );
  const config = rows[0]?.details.config;
  if (!config) throw new Error(`tenant ${tenantId} has no configuration revision`);
  return config;
}

/** A failure of one step, with what the operator needs to act on it (kept on the tenant). */
export class StepFailure extends Error {
  override name = 'StepFailure';
  constructor(
    readonly step: string,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Any error of a step as the StepFailure kept on the tenant (provisioning and decommission). */
export function describeFailure(step: string, error: unknown): StepFailure {
  if (error instanceof StepFailure) return error;
  if (error instanceof RenderError)
    return new StepFailure(step, 'values_invalid', error.message, { problems: error.problems });
  if (error instanceof HelmError)
    return new StepFailure(step, error.timedOut ? 'helm_timeout' : 'helm_failed', error.message, {
      operation: error.operation,
      stderr: error.stderr,
    });
  if (error instanceof NamespaceConflictError)
    return new StepFailure(step, 'namespace_conflict', error.message);
  if (error instanceof NamespaceTerminatingError)
    return new StepFailure(step, 'namespace_terminating', error.message);
  const message = error instanceof Error ? error.message : String(error);
  return new StepFailure(step, 'step_failed', message.slice(0, 2000));
}

/**
 * Drives one tenant as far as it can go now: the remaining provisioning steps of a pending
 * tenant, then the readiness wait of a provisioning one. Each step is idempotent and recorded
 * when done, so running this again (retry, restart, another replica) resumes after the last
 * completed step. The caller holds the tenant's lock.
 */
export async function advanceProvisioning(
  deps: OrchestratorDeps,
  tenantId: string,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    signal.throwIfAborted();
    const tenant = await deps.db.withoutTenant((tx) => loadTenant(tx, tenantId));
    if (!tenant) return;
    if (tenant.state === 'pending' && tenant.error_details === null) {
      const done = await deps.db.withTenant(tenantId, (tx) => completedSteps(tx, tenantId));
      const step = nextStep(done);
      if (step === undefined || step === 'package_ready') return; // transition already made
      try {
        await runStep(deps, tenant, step);
      } catch (error) {
        if (signal.aborted) throw error;
        // Before its namespace_created step, `tenant-<slug>` is not svc's (it may be someone
        // else's namespace of that name): the rollback leaves it alone.
        await failProvisioning(
          deps,
          tenant,
          describeFailure(step, error),
          done.has('namespace_created'),
        );
        return;
      }
      continue;
    }
    if (tenant.state === 'provisioning') {
      await awaitReadiness(deps, tenant, signal);
    }
    return;
  }
}

async function runStep(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  step: ProvisioningStep,
): Promise<void> {
  const namespace = namespaceOf(tenant.slug);
  const labels = namespaceLabels(tenant.id, deps.install);
  switch (step) {
    case 'install_secrets_written':
      // Written by the API in the creating transaction; a tenant without it was not created
      // by svc and is not ours to provision.
      throw new StepFailure(step, 'install_secrets_missing', 'install-namespace Secrets missing');
    case 'namespace_created': {
      const outcome = await deps.namespaces.ensure(namespace, labels);
      const binding = await bindServiceIdentity(deps, namespace);
      await record(deps, tenant.id, step, {
        namespace,
        outcome,
        role_binding: {
          name: SERVICE_IDENTITY_BINDING,
          cluster_role: tenantClusterRole(deps.install),
          outcome: binding,
        },
      });
      return;
    }
    case 'bootstrap_secrets_written':
      await writeBootstrapSecrets(deps, tenant, namespace);
      return;
    case 'edge_ports_allocated': {
      const config = await deps.db.withTenant(tenant.id, (tx) => latestConfig(tx, tenant.id));
      if (config.monitor_ingress?.mode !== 'edge-proxy') {
        await record(deps, tenant.id, step, { mode: 'loadbalancer', ports: null });
        return;
      }
      const ports = await allocateEdgePorts(deps, tenant.id);
      await record(deps, tenant.id, step, { mode: 'edge-proxy', ports });
      return;
    }
    case 'package_installed':
      await installPackage(deps, tenant, namespace);
      return;
    case 'package_ready':
      return;
  }
}

async function record(
  deps: OrchestratorDeps,
  tenantId: string,
  step: ProvisioningStep,
  details: Record<string, unknown>,
): Promise<void> {
  await deps.db.withTenant(tenantId, (tx) =>
    recordStep(tx, tenantId, step, ORCHESTRATOR_ACTOR, details),
  );
}

/**
 * Spec §9.4 items 4 and 6: the data-plane credentials move from the install namespace into
 * the tenant namespace now that it exists; the adapter gets its exchange credential and a
 * first JWT. The database records where they are (namespace, name, version), never the values.
 */
async function writeBootstrapSecrets(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  namespace: string,
): Promise<void> {
  const written = await putBootstrapSecrets(deps, tenant, namespace);
  await deps.db.withTenant(tenant.id, (tx) =>
    recordStep(tx, tenant.id, 'bootstrap_secrets_written', ORCHESTRATOR_ACTOR, {
      namespace,
      ...written,
    }),
  );
}

/**
 * Writes the tenant namespace's Secrets from the install-namespace bootstrap Secret and
 * upserts their references; also how the reconciler refills a namespace it recreated.
 */
export async function putBootstrapSecrets(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  namespace: string,
): Promise<{ secrets: string[]; adapter_token_expires_at: string }> {
  const names = installSecretNames(tenant.id);
  // A bootstrap Secret lost with its cluster (issue 18 item 8) is issued anew, with a fresh
  // adapter credential: the namespace it fills is being built, so nothing holds the old ones.
  await restoreBootstrapSecret(deps, tenant.id);
  const bundle = await deps.secrets.read(names.bootstrap);
  if (!bundle) {
    throw new StepFailure(
      'bootstrap_secrets_written',
      'install_secrets_missing',
      `Secret ${deps.secrets.namespace}/${names.bootstrap} is missing`,
    );
  }
  const labels = { 'managed-by': 'svc', 'tenant-id': tenant.id };
  const { 'adapter-bootstrap-credential': credential, 'tenant-id': _, ...components } = bundle;
  if (!credential) {
    throw new StepFailure(
      'bootstrap_secrets_written',
      'install_secrets_missing',
      'adapter credential missing from the bootstrap Secret',
    );
  }
  await deps.namespaces.putSecret(namespace, COMPONENT_BOOTSTRAP_SECRET, components, labels);
  await deps.namespaces.putSecret(
    namespace,
    ADAPTER_BOOTSTRAP_SECRET.name,
    {
      [ADAPTER_BOOTSTRAP_SECRET.keys.tenantId]: tenant.id,
      [ADAPTER_BOOTSTRAP_SECRET.keys.credential]: credential,
    },
    labels,
  );
  const minted = await deps.tokens.mintAdapter({ tenantId: tenant.id });
  await deps.namespaces.putSecret(
    namespace,
    ADAPTER_TOKEN_SECRET.name,
    { [ADAPTER_TOKEN_SECRET.key]: minted.token },
    labels,
  );
  const refs = [
    ['component-bootstrap', COMPONENT_BOOTSTRAP_SECRET],
    [ADAPTER_BOOTSTRAP_SECRET.purpose, ADAPTER_BOOTSTRAP_SECRET.name],
    ['adapter-token', ADAPTER_TOKEN_SECRET.name],
  ] as const;
  await deps.db.withTenant(tenant.id, async (tx) => {
    for (const [purpose, name] of refs) {
      await upsertSecretRef(tx, tenant.id, purpose, namespace, name);
    }
  });
  return {
    secrets: refs.map(([, name]) => name),
    adapter_token_expires_at: new Date(minted.claims.exp * 1000).toISOString(),
  };
}

/** A re-run after a rollback writes the same names again: the reference gets a new version. */
export async function upsertSecretRef(
  tx: Transaction,
  tenantId: string,
  purpose: string,
  namespace: string,
  name: string,
): Promise<void> {
  await tx.query(
    `INSERT INTO tenant_secrets (tenant_id, purpose, namespace, name) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, purpose) DO UPDATE
       SET namespace = excluded.namespace, name = excluded.name,
           version = tenant_secrets.version + 1, rotated_at = now()`,
    [tenantId, purpose, namespace, name],
  );
}

/**
 * Lowest free pair. Two orchestrators racing for the same pair meet the UNIQUE constraint;
 * the loser tries the next one. A tenant that already holds a pair keeps it.
 */
async function allocateEdgePorts(
  deps: OrchestratorDeps,
  tenantId: string,
): Promise<{ events: number; enrollment: number }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      const pair = await deps.db.withoutTenant(async (tx) => {
        const { rows } = await tx.query<{ edge_port_pair: number }>(
          `UPDATE tenants SET edge_port_pair = coalesce(edge_port_pair, (
              SELECT min(k) FROM generate_series(0, 32767) AS k
               WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.edge_port_pair = k)))
            WHERE id = $1 RETURNING edge_port_pair`,
          [tenantId],
        );
        return rows[0]?.edge_port_pair;
      });
      if (pair === undefined || pair === null)
        throw new StepFailure(
          'edge_ports_allocated',
          'edge_ports_exhausted',
          'no free edge port pair',
        );
      return edgePorts(deps.edgePortBase, pair);
    } catch (error) {
      if ((error as { code?: string }).code !== '23505') throw error;
    }
  }
  throw new StepFailure(
    'edge_ports_allocated',
    'edge_ports_contended',
    'could not allocate an edge port pair',
  );
}

export function edgePorts(base: number, pair: number): { events: number; enrollment: number } {
  return { events: base + 2 * pair, enrollment: base + 2 * pair + 1 };
}

/** The chart version a new tenant gets: the newest the matrix supports for this svc. */
export async function installableVersion(deps: OrchestratorDeps): Promise<string> {
  const supported = await deps.db.withoutTenant(async (tx) => {
    const { rows } = await tx.query<{ tenant_chart_version: string }>(
      `SELECT tenant_chart_version FROM chart_compatibility
        WHERE system_version = $1 AND status = 'supported'`,
      [deps.systemVersion],
    );
    return new Set(rows.map((r) => r.tenant_chart_version));
  });
  const version = deps.installVersion
    ? supported.has(deps.installVersion) && deps.catalog.get(deps.installVersion)
      ? deps.installVersion
      : undefined
    : deps.catalog
        .versions()
        .filter((v) => supported.has(v))
        .at(-1);
  if (!version) {
    throw new StepFailure(
      'package_installed',
      'no_supported_chart',
      `no bundled tenant chart is supported with svc ${deps.systemVersion}`,
      { bundled: deps.catalog.versions() },
    );
  }
  return version;
}

export async function renderFor(deps: OrchestratorDeps, tenant: TenantRecord, version: string) {
  const chart = deps.catalog.get(version);
  if (!chart)
    throw new StepFailure(
      'package_installed',
      'chart_unknown',
      `tenant chart ${version} is not available`,
    );
  const { config, hasLlmKey, ports } = await deps.db.withTenant(tenant.id, async (tx) => {
    const config = await latestConfig(tx, tenant.id);
    const { rows } = await tx.query<{ purpose: string }>(
      `SELECT purpose FROM tenant_secrets WHERE tenant_id = $1 AND purpose = 'llm'`,
      [tenant.id],
    );
    const done = await completedSteps(tx, tenant.id);
    const ports = done.get('edge_ports_allocated')?.details.ports as
      | { events: number; enrollment: number }
      | null
      | undefined;
    return { config, hasLlmKey: rows.length > 0, ports };
  });
  const values = renderTenantValues({
    tenant: { id: tenant.id, slug: tenant.slug, displayName: tenant.display_name },
    config,
    install: deps.install,
    settings: deps.settings,
    chartDefaults: chart.defaults,
    hasLlmKey,
    ...(ports ? { edgePorts: ports } : {}),
  });
  return { chart, values };
}

/**
 * Spec §9.4 items 6–7. A release left by a crash between `helm install` and the step record
 * is adopted when deployed, and removed first when it is half-made.
 */
async function installPackage(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  namespace: string,
): Promise<void> {
  const version = await installableVersion(deps);
  const existing = await deps.helm.status({ release: RELEASE_NAME, namespace });
  let revision = existing?.revision;
  if (existing && existing.status !== 'deployed') {
    await deps.helm.uninstall({
      release: RELEASE_NAME,
      namespace,
      timeoutMs: deps.timing.helmTimeoutMs,
      wait: true,
    });
  }
  if (existing?.status !== 'deployed') {
    revision = await installRelease(deps, tenant, namespace, version);
  }
  await deps.db.withTenant(tenant.id, async (tx) => {
    await recordStep(tx, tenant.id, 'package_installed', ORCHESTRATOR_ACTOR, {
      namespace,
      release: RELEASE_NAME,
      chart_version: version,
      revision,
    });
    await tx.query('UPDATE tenants SET chart_version = $2 WHERE id = $1', [tenant.id, version]);
    await transition(tx, {
      tenantId: tenant.id,
      trigger: 'package_installed',
      actor: ORCHESTRATOR_ACTOR,
      details: { chart_version: version, namespace },
    });
    await writeAudit(tx, {
      tenantId: tenant.id,
      actorPrincipal: 'System',
      actorId: ORCHESTRATOR_ACTOR,
      action: 'tenant.provision',
      resourceType: 'tenant',
      resourceId: tenant.id,
      before: { state: 'pending' },
      after: { state: 'provisioning', chart_version: version },
    });
  });
}

/** `helm install` (no wait) of `version` with the tenant's values; returns the revision. */
export async function installRelease(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  namespace: string,
  version: string,
): Promise<number> {
  const { chart, values } = await renderFor(deps, tenant, version);
  const release = await deps.helm.install({
    release: RELEASE_NAME,
    namespace,
    chart: chart.path,
    values,
    timeoutMs: deps.timing.helmTimeoutMs,
    wait: false,
  });
  return release.revision;
}

async function removeOwnedNamespace(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  namespace: string,
  rollback: Record<string, unknown>,
): Promise<void> {
  try {
    await deps.helm.uninstall({
      release: RELEASE_NAME,
      namespace,
      timeoutMs: deps.timing.helmTimeoutMs,
      wait: true,
    });
    rollback.package = 'uninstalled';
  } catch (error) {
    rollback.package = `uninstall failed: ${error instanceof Error ? error.message.slice(0, 500) : String(error)}`;
  }
  try {
    await deps.namespaces.remove(namespace, {
      waitMs: deps.timing.namespaceDeleteMs,
      expectLabels: namespaceLabels(tenant.id, deps.install),
    });
    rollback.namespace = 'deleted';
  } catch (error) {
    rollback.namespace = `delete failed: ${error instanceof Error ? error.message.slice(0, 500) : String(error)}`;
  }
}

export type Readiness = Awaited<ReturnType<typeof readinessReport>>;

export function notReady(report: Readiness): string[] {
  return [
    ...report.workloads
      .filter((w) => w.ready < w.desired)
      .map((w) => `${w.kind}/${w.name} ${w.ready}/${w.desired}`),
    ...report.pvcs.filter((v) => v.phase !== 'Bound').map((v) => `pvc/${v.pvc} ${v.phase}`),
  ];
}

/**
 * Waits until every workload of the package is Ready (spec §9.4 item 8) with the deadline
 * counted from the moment the tenant entered `provisioning`, so a restarted orchestrator keeps
 * the original deadline. Polling our own report rather than `helm --wait` keeps the wait
 * resumable and the progress visible.
 */
async function awaitReadiness(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  signal: AbortSignal,
): Promise<void> {
  const done = await deps.db.withTenant(tenant.id, (tx) => completedSteps(tx, tenant.id));
  const deadline = tenant.state_changed_at.getTime() + deps.timing.readinessTimeoutMs;
  if (done.has('package_ready')) {
    // A heartbeat that found the tenant locked (this orchestrator recording readiness) was
    // noted instead of activating: complete it here.
    const activated = await deps.db.withTenant(tenant.id, (tx) =>
      activateFromNotedHeartbeat(tx, tenant),
    );
    if (activated) return;
    // §3.1 row 3 needs the heartbeat within the same timeout: a package that is Ready but
    // whose adapter never reports is not a working tenant.
    if (deps.now().getTime() >= deadline) {
      await failProvisioning(
        deps,
        tenant,
        new StepFailure(
          'package_ready',
          'adapter_silent',
          `package Ready but no adapter heartbeat within ${Math.round(deps.timing.readinessTimeoutMs / 1000)} s`,
        ),
      );
    }
    return;
  }
  const namespace = namespaceOf(tenant.slug);
  let lastPending: string[] = [];
  for (;;) {
    let report: Readiness | undefined;
    try {
      report = await readinessReport(deps.kubeConfig, namespace);
      lastPending = notReady(report);
    } catch (error) {
      deps.logger.warn({ err: error, tenant_id: tenant.id }, 'readiness read failed; retrying');
    }
    if (report && report.workloads.length > 0 && lastPending.length === 0) {
      await markReady(deps, tenant, report);
      return;
    }
    if (deps.now().getTime() >= deadline) {
      await failProvisioning(
        deps,
        tenant,
        new StepFailure(
          'package_ready',
          'readiness_timeout',
          `package not Ready within ${Math.round(deps.timing.readinessTimeoutMs / 1000)} s`,
          { not_ready: lastPending.slice(0, 50) },
        ),
      );
      return;
    }
    await sleep(deps.timing.readinessPollMs, undefined, { signal });
  }
}

/**
 * Records readiness; if the adapter has already been heard from while provisioning, its
 * heartbeat completes the activation now (spec §3.1 row 3 needs both).
 */
async function markReady(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  report: Readiness,
): Promise<void> {
  await deps.db.withTenant(tenant.id, async (tx) => {
    await recordStep(tx, tenant.id, 'package_ready', ORCHESTRATOR_ACTOR, {
      workloads: report.workloads.length,
      volumes: report.pvcs.length,
    });
    await activateFromNotedHeartbeat(tx, tenant);
  });
}

/**
 * Spec §3.1 row 3 with the heartbeat first: the adapter was heard from during this
 * provisioning attempt (`heartbeat_before_ready`), so recording readiness activates the tenant.
 * The caller holds the tenant's lock and has recorded `package_ready`.
 */
async function activateFromNotedHeartbeat(tx: Transaction, tenant: TenantRecord): Promise<boolean> {
  const { rows } = await tx.query<{ details: { adapter_version?: string }; occurred_at: Date }>(
    `SELECT details, occurred_at FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND step = 'heartbeat_before_ready' AND occurred_at >= $2
      ORDER BY id DESC LIMIT 1`,
    [tenant.id, tenant.state_changed_at],
  );
  const beat = rows[0];
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
    tenantId: tenant.id,
    actorPrincipal: 'System',
    actorId: ORCHESTRATOR_ACTOR,
    action: 'tenant.activate',
    resourceType: 'tenant',
    resourceId: tenant.id,
    before: { state: 'provisioning' },
    after: { state: 'active' },
    details: { adapter_version: beat.details.adapter_version },
  });
  return true;
}

/**
 * Spec §3.1 row 4 and §7: a failed step rolls back (package uninstalled, namespace deleted),
 * keeps the error on the tenant, and leaves it pending for an operator's retry. The
 * install-namespace Secrets stay: a retry resumes from the namespace.
 */
export async function failProvisioning(
  deps: OrchestratorDeps,
  tenant: TenantRecord,
  failure: StepFailure,
  ownsNamespace = true,
): Promise<void> {
  deps.logger.warn(
    { tenant_id: tenant.id, step: failure.step, code: failure.code, err: failure },
    'provisioning failed; rolling back',
  );
  const namespace = namespaceOf(tenant.slug);
  const rollback: Record<string, unknown> = {};
  if (ownsNamespace) await removeOwnedNamespace(deps, tenant, namespace, rollback);
  else rollback.namespace = 'not created by svc; left alone';
  const errorDetails = {
    step: failure.step,
    code: failure.code,
    message: failure.message,
    ...failure.details,
    rollback,
    failed_at: deps.now().toISOString(),
  };
  const undone = PROVISIONING_STEPS.filter((s) => s !== 'install_secrets_written');
  await deps.db.withTenant(tenant.id, async (tx) => {
    await recordStep(tx, tenant.id, 'rolled_back', ORCHESTRATOR_ACTOR, { undone, ...rollback });
    await tx.query(
      `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, details, actor)
       VALUES ($1, 'error', $2, $3, $4)`,
      [tenant.id, failure.step, JSON.stringify(errorDetails), ORCHESTRATOR_ACTOR],
    );
    const moved = await tryTransition(tx, {
      tenantId: tenant.id,
      trigger: 'provisioning_failed',
      actor: ORCHESTRATOR_ACTOR,
      details: { code: failure.code },
      errorDetails,
    });
    if (!moved) {
      await tx.query(
        `UPDATE tenants SET error_details = $2, updated_at = now() WHERE id = $1 AND state = 'pending'`,
        [tenant.id, JSON.stringify(errorDetails)],
      );
    }
    await writeAudit(tx, {
      tenantId: tenant.id,
      actorPrincipal: 'System',
      actorId: ORCHESTRATOR_ACTOR,
      action: 'tenant.provision.fail',
      resourceType: 'tenant',
      resourceId: tenant.id,
      before: { state: tenant.state },
      after: { state: 'pending' },
      details: { step: failure.step, code: failure.code, rollback },
    });
  });
}
