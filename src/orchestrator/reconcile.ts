import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import {
  type ClusterSnapshot,
  releaseRecord,
  type SnapshotNamespace,
} from '../cluster/snapshot.ts';
import type { Drift, DriftFinding } from '../domains/provisioning/provisioning-types.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import { putBootstrapSecrets } from './bootstrap-secrets.ts';
import type { OrchestratorDeps } from './context.ts';
import { renewEnrollmentTls } from './enrollment-cluster.ts';
import { renewIndexerTls } from './indexer-tls-roll.ts';
import { installRelease, RELEASE_NAME } from './release.ts';
import { namespaceLabels, namespaceOf } from './render.ts';
import { bindServiceIdentity } from './service-identity.ts';
import { shortMessage } from './step-failure.ts';

/**
 * What the cluster holds under a tenant's namespace name: nothing, svc's namespace for this
 * tenant (svc's labels with this tenant's id and this install's ids), one being deleted, or
 * someone else's (never touched: not adopted, not deleted, no helm call inside it).
 */
export type NamespaceOwnership = 'absent' | 'ours' | 'terminating' | 'foreign';

export async function inspectNamespace(
  deps: Pick<OrchestratorDeps, 'kubeConfig' | 'install'>,
  tenant: Pick<Tenant, 'id' | 'slug'>,
  snapshot?: ClusterSnapshot,
): Promise<NamespaceOwnership> {
  const name = namespaceOf(tenant.slug);
  // svc's namespaces are all in the snapshot; any other name is read to tell absent from foreign.
  const listed = snapshot?.namespaces.get(name);
  if (listed) return ownership(deps, tenant, listed);
  const core = deps.kubeConfig.makeApiClient(CoreV1Api);
  try {
    const ns = await core.readNamespace({ name });
    return ownership(deps, tenant, {
      labels: ns.metadata?.labels ?? {},
      terminating: ns.metadata?.deletionTimestamp !== undefined,
    });
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return 'absent';
    throw error;
  }
}

function ownership(
  deps: Pick<OrchestratorDeps, 'install'>,
  tenant: Pick<Tenant, 'id'>,
  ns: SnapshotNamespace,
): NamespaceOwnership {
  const expected = { 'managed-by': 'svc', ...namespaceLabels(tenant.id, deps.install) };
  if (!Object.entries(expected).every(([k, v]) => ns.labels[k] === v)) return 'foreign';
  return ns.terminating ? 'terminating' : 'ours';
}

export type { Drift, DriftFinding };

/**
 * Reconciliation (docs/orchestrator.md): compares one tenant's expected objects with the cluster, repairs what is
 * safe, and records the outcome. The caller holds the tenant's lock.
 *
 * Checked: for an `active` tenant the namespace (and svc's labels on it), the release and the
 * install-namespace Secrets svc's record lists; for a failed `pending` tenant only those
 * Secrets (a retry needs them). Provisioning and decommissioning tenants belong to their flows.
 * Repaired, for an active tenant only: a missing namespace svc's record says svc created is
 * recreated (labels, svc's RoleBinding, the namespace Secrets), a missing release re-installed
 * at the tenant's chart version. The indexer's certificates are renewed when they expire within
 * 30 days or no longer chain to their CA, and their readers rolled (indexer-tls-roll.ts); a
 * routine renewal is maintenance, logged, not drift. Never repaired: a namespace without svc's
 * labels (someone else's; reported, not adopted), a release helm reports in another state, a
 * lost install Secret (its credentials exist nowhere else).
 */
export async function reconcileTenant(
  deps: OrchestratorDeps,
  tenantId: string,
  snapshot?: ClusterSnapshot,
): Promise<Drift | null> {
  const tenant = await deps.provisioning.find(tenantId);
  if (!tenant) return null;
  const failedPending = tenant.state === 'pending' && tenant.error_details !== null;
  if (tenant.state !== 'active' && !failedPending) return null;
  const { refs, createdNamespace } = await deps.provisioning.reconcileFacts(
    tenant.id,
    deps.secrets.namespace,
  );
  const findings: DriftFinding[] = [];
  for (const name of refs) {
    // The snapshot's answer is confirmed by a read before it is reported (taken at pass start).
    if (snapshot?.installSecrets.has(name)) continue;
    if ((await deps.secrets.read(name)) === undefined) {
      findings.push({
        object: 'install_secret',
        name: `${deps.secrets.namespace}/${name}`,
        problem: 'missing',
        repair: 'none',
        detail: 'its credentials exist nowhere else',
      });
    }
  }
  if (tenant.state === 'active') {
    const found = await checkPackage(deps, tenant, createdNamespace, snapshot);
    findings.push(...found);
    // Only in svc's own namespace, present (or just recreated, whose refill issued the set).
    if (!found.some((f) => f.object === 'namespace' && f.repair !== 'recreated')) {
      await renewIndexerTls(deps, tenant).catch((error: unknown) =>
        deps.logger.warn(
          { err: error, tenant_id: tenant.id },
          'indexer TLS renewal failed; retried on the next pass',
        ),
      );
      // The enrollment certificate follows the addresses agents use (a load balancer assigned
      // after the install) and its expiry (docs/enrollment.md "What svc does").
      await renewEnrollmentTls(deps, tenant);
    }
  }
  return recordDrift(deps, tenant, findings);
}

async function checkPackage(
  deps: OrchestratorDeps,
  tenant: Tenant,
  createdNamespace: boolean,
  snapshot: ClusterSnapshot | undefined,
): Promise<DriftFinding[]> {
  const namespace = namespaceOf(tenant.slug);
  const ownership = await inspectNamespace(deps, tenant, snapshot);
  if (ownership === 'foreign') {
    return [
      {
        object: 'namespace',
        name: namespace,
        problem: 'foreign',
        repair: 'none',
        detail: "it does not carry svc's labels for this tenant; svc does not adopt it",
      },
    ];
  }
  if (ownership === 'terminating') {
    return [{ object: 'namespace', name: namespace, problem: 'terminating', repair: 'none' }];
  }
  const findings: DriftFinding[] = [];
  if (ownership === 'absent') {
    const finding: DriftFinding = {
      object: 'namespace',
      name: namespace,
      problem: 'missing',
      repair: 'none',
    };
    findings.push(finding);
    if (!createdNamespace) {
      finding.detail = "svc's record does not say svc created it";
      return findings;
    }
    try {
      await deps.namespaces.ensure(namespace, namespaceLabels(tenant.id, deps.install));
      await bindServiceIdentity(deps, namespace);
      await putBootstrapSecrets(deps, tenant, namespace);
      finding.repair = 'recreated';
    } catch (error) {
      finding.repair = 'failed';
      finding.detail = shortMessage(error);
      return findings;
    }
  }
  const release = await releaseStatus(deps, namespace, snapshot);
  if (release === undefined) {
    const finding: DriftFinding = {
      object: 'release',
      name: `${namespace}/${RELEASE_NAME}`,
      problem: 'missing',
      repair: 'none',
    };
    findings.push(finding);
    if (tenant.chart_version === null) {
      finding.detail = 'no chart version recorded';
      return findings;
    }
    try {
      await bindServiceIdentity(deps, namespace);
      await installRelease(deps, tenant, namespace, tenant.chart_version);
      finding.repair = 'reinstalled';
    } catch (error) {
      finding.repair = 'failed';
      finding.detail = shortMessage(error);
    }
  } else if (release.status !== 'deployed') {
    findings.push({
      object: 'release',
      name: `${namespace}/${RELEASE_NAME}`,
      problem: 'not_deployed',
      repair: 'none',
      detail: `helm reports ${release.status}`,
    });
  }
  return findings;
}

/**
 * The release's status. In a pass (a snapshot), from helm's storage labels in one LIST, and a
 * helm process only to confirm a release that looks missing or not deployed before it is
 * reported or repaired; without one, from helm.
 */
async function releaseStatus(
  deps: Pick<OrchestratorDeps, 'helm' | 'kubeConfig'>,
  namespace: string,
  snapshot: ClusterSnapshot | undefined,
): Promise<{ status: string } | undefined> {
  if (snapshot) {
    // A failed LIST is no finding: helm answers instead.
    const listed = await releaseRecord(deps.kubeConfig, namespace, RELEASE_NAME).catch(
      () => undefined,
    );
    if (listed?.status === 'deployed') return listed;
  }
  return deps.helm.status({ release: RELEASE_NAME, namespace });
}

/**
 * The provisioning service keeps the finding (and its lifecycle event) when it changed or svc
 * repaired something; the log says so then, and only then.
 */
async function recordDrift(
  deps: Pick<OrchestratorDeps, 'provisioning' | 'now' | 'logger'>,
  tenant: Tenant,
  findings: DriftFinding[],
): Promise<Drift | null> {
  const { drift, changed, previous } = await deps.provisioning.recordDrift(
    tenant,
    findings,
    deps.now(),
  );
  if (changed) {
    deps.logger.warn(
      { tenant_id: tenant.id, findings, previous },
      findings.length === 0
        ? 'tenant matches the cluster again'
        : 'tenant drifted from the cluster',
    );
  }
  return drift;
}
