import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { createHelmRunner } from '../../src/cluster/helm.ts';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import { RELEASE_NAME } from '../../src/orchestrator/release.ts';
import { refreshAdapterToken } from '../../src/orchestrator/token-refresh.ts';
import { createTestNamespace, serviceAccountKubeconfig } from '../../testcluster/harness.ts';
import { mergeValues, renderSystemChart, sampleValues } from '../policies/system-chart.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import {
  createTenantVia,
  PROVISIONED_LIFECYCLE,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

// The whole provisioning flow run as svc's own cluster identity, confined exactly as an install
// confines it: the system chart's ServiceAccount, ClusterRoles (the cluster-wide one and
// svc-tenant.<ns>, which svc binds in each tenant namespace itself), ClusterRoleBinding,
// install-namespace Role/Binding and the three admission policies, rendered with this run's
// install namespace, ids and a test-unique ServiceAccount name, and nothing else. The orchestrator, its helm runner,
// its readiness reads and the API's install-namespace SecretStore all act through a kubeconfig
// holding that ServiceAccount's token; the admin is used only to set up, to inspect and to clean
// up. (Unlike test/policies/, the ServiceAccount is *not* bound to cluster-admin: a denial here
// may come from RBAC or from a policy, and each assertion says which.)

const cluster = getTestCluster();
const admin = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
const adminCore = cluster.kubeConfig.makeApiClient(CoreV1Api);
const helmBinary = join(cluster.binDir, 'helm');
const policiesDir = join(import.meta.dirname, '..', '..', 'policies');
const suffix = randomBytes(3).toString('hex');
const msspId = randomUUID();
const installId = randomUUID();
const serviceAccount = `svc-id-${suffix}`;

let installNamespace = '';
let svcKubeconfigPath = '';
let asSvc: KubernetesObjectApi;
let svcCore: CoreV1Api;
/** Objects the admin applied or made, deleted in reverse order at the end. */
const applied: KubernetesObject[] = [];
/** Namespaces to delete (as admin) at the end, whoever made them. */
const namespaces = new Set<string>();

const namespacePolicy = 'svc-tenant-namespaces';
const namespacedPolicy = 'svc-namespaced-writes';
const clusterPolicy = 'svc-cluster-scoped-writes';
const policies = [namespacePolicy, namespacedPolicy, clusterPolicy];

function policyName(base: string): string {
  return `${base}.${installNamespace}`;
}

function svcUser(): string {
  return `system:serviceaccount:${installNamespace}:${serviceAccount}`;
}

/** The Status message of a refused request ('' when it is not an ApiException). */
function statusMessage(error: unknown): string {
  if (!(error instanceof ApiException)) return '';
  try {
    const body: unknown = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
    return String((body as { message?: unknown }).message ?? '');
  } catch {
    return String(error.body);
  }
}

/** 403 from one of this install's admission policies, carrying `text`. */
function isPolicyDenial(policy: string, text: string): (error: unknown) => boolean {
  return (error) =>
    error instanceof ApiException &&
    error.code === 403 &&
    statusMessage(error).includes(`ValidatingAdmissionPolicy '${policyName(policy)}'`) &&
    statusMessage(error).includes(text);
}

/** 403 from RBAC (the authorizer), before any admission policy is consulted. */
function isRbacDenial(verb: string, resource: string): (error: unknown) => boolean {
  return (error) =>
    error instanceof ApiException &&
    error.code === 403 &&
    statusMessage(error).includes(`User "${svcUser()}" cannot ${verb} resource "${resource}"`) &&
    !statusMessage(error).includes('ValidatingAdmissionPolicy');
}

function tenantLabels(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    tenant: 'true',
    'managed-by': 'svc',
    'mssp-id': msspId,
    'install-id': installId,
    'tenant-id': randomUUID(),
    ...overrides,
  };
}

function namespaceObject(name: string, labels?: Record<string, string>): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: labels === undefined ? { name } : { name, labels },
  };
}

function configMap(namespace: string, name: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace },
    data: { k: 'v' },
  } as KubernetesObject;
}

function secret(namespace: string, name: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    stringData: { key: 'value' },
  } as KubernetesObject;
}

function roleBinding(namespace: string, name: string, clusterRoleName: string): KubernetesObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRoleName },
    subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace: installNamespace }],
  } as KubernetesObject;
}

/** The ClusterRole svc binds in its tenant namespaces (templates/rbac.yaml). */
function tenantRole(): string {
  return `svc-tenant.${installNamespace}`;
}

function clusterRole(name: string, rules: unknown[]): KubernetesObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name },
    rules,
  } as KubernetesObject;
}

async function exists(object: KubernetesObject): Promise<boolean> {
  try {
    await admin.read(object as KubernetesObject & { metadata: { name: string } });
    return true;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return false;
    throw error;
  }
}

/**
 * The system chart's identity and confinement for this install, in apply order: exactly its
 * ServiceAccount, RBAC and admission policies (templates/serviceaccount.yaml, rbac.yaml and
 * admission/*), nothing else of the chart.
 */
async function identityManifests(): Promise<KubernetesObject[]> {
  const values = mergeValues(sampleValues(installNamespace, { msspId, installId }), {
    serviceAccount: { name: serviceAccount },
    admission: { engine: 'vap' },
  });
  const admission = (await readdir(policiesDir))
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => `templates/admission/${file}`);
  const docs = await renderSystemChart(helmBinary, installNamespace, values, [
    'templates/serviceaccount.yaml',
    'templates/rbac.yaml',
    ...admission,
  ]);
  const order = [
    'ServiceAccount',
    'ClusterRole',
    'ClusterRoleBinding',
    'Role',
    'RoleBinding',
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding',
  ];
  for (const doc of docs) {
    assert.ok(order.includes(doc.kind ?? ''), `unexpected ${doc.kind} in the identity templates`);
  }
  return docs.sort((a, b) => order.indexOf(a.kind ?? '') - order.indexOf(b.kind ?? ''));
}

const o = useOrchestration(async () => {
  installNamespace = await createTestNamespace(cluster, 'svc-install');
  namespaces.add(installNamespace);
  for (const manifest of await identityManifests()) {
    applied.push(await admin.create(manifest));
  }
  svcKubeconfigPath = await serviceAccountKubeconfig(cluster, installNamespace, serviceAccount);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(svcKubeconfigPath);
  asSvc = KubernetesObjectApi.makeApiClient(kubeConfig);
  svcCore = kubeConfig.makeApiClient(CoreV1Api);

  // RBAC bindings and policies reach the API server through informers. Dry runs as svc show
  // when both are in force: the policies deny with their own messages (RBAC would allow these
  // two: svc may create RoleBindings binding its tenant role anywhere, as far as RBAC goes), and
  // a proper tenant namespace and an install-namespace Secret pass (RBAC allows them).
  // The cluster-scoped policy cannot be probed here: under the chart's RBAC every cluster-scoped
  // write it would judge is refused by RBAC first (see the "second line" test).
  await waitUntil(
    'the chart RBAC and the admission policies to take effect for svc',
    async () => {
      const probes = await Promise.all([
        asSvc
          .create(roleBinding(installNamespace, 'probe', tenantRole()), undefined, 'All')
          .then(() => false, isPolicyDenial(namespacedPolicy, 'only in its own tenant namespaces')),
        asSvc
          .create(namespaceObject(`tenant-probe-x${suffix}`), undefined, 'All')
          .then(() => false, isPolicyDenial(namespacePolicy, 'must carry')),
        asSvc
          .create(namespaceObject(`tenant-probe-${suffix}`, tenantLabels()), undefined, 'All')
          .then(() => true),
        asSvc.create(secret(installNamespace, 'probe'), undefined, 'All').then(() => true),
      ]);
      return probes.every(Boolean) ? true : undefined;
    },
    60_000,
  );
  // Every cluster dependency of the API and the orchestrator acts as svc's ServiceAccount; the
  // organization row carries the ids the policies were rendered with. Retention is long enough
  // to see `soft-deleted` after the decommission test.
  return {
    kubeconfigPath: svcKubeconfigPath,
    installNamespace,
    install: { msspId, installId },
    serviceAccount,
    timing: { retentionMs: 600_000 },
  };
});

after(async () => {
  for (const name of namespaces) {
    await adminCore.deleteNamespace({ name }).catch(() => undefined);
  }
  for (const object of applied.reverse()) {
    await admin.delete(object).catch(() => undefined);
  }
  if (svcKubeconfigPath) await rm(svcKubeconfigPath, { force: true });
});

let tenant: { id: string; slug: string; namespace: string } | undefined;

test("§9.4 §5.8 svc provisions a tenant as its own ServiceAccount, confined by the system chart's RBAC and policies: provisioning, package_ready, heartbeat → active", {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('sid');
  const namespace = `tenant-${slug}`;
  namespaces.add(namespace);
  const id = await createTenantVia(o, tenantConfig(slug));
  tenant = { id, slug, namespace };

  // §2.5: the namespace carries this install's labels, which the policies compare with their own.
  await waitForState(o, id, 'provisioning');
  const ns = await adminCore.readNamespace({ name: namespace });
  const { 'kubernetes.io/metadata.name': _, ...labels } = ns.metadata?.labels ?? {};
  assert.deepEqual(labels, {
    tenant: 'true',
    'managed-by': 'svc',
    'mssp-id': msspId,
    'install-id': installId,
    'tenant-id': id,
  });

  // svc bound its tenant role in the new namespace itself (namespace_created), as itself.
  const rbacAdmin = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const binding = await rbacAdmin.readNamespacedRoleBinding({ namespace, name: 'svc' });
  assert.equal(binding.roleRef.kind, 'ClusterRole');
  assert.equal(binding.roleRef.name, tenantRole());
  assert.deepEqual(
    binding.subjects?.map((x) => [x.kind, x.name, x.namespace]),
    [['ServiceAccount', serviceAccount, installNamespace]],
  );

  // Secrets in the install namespace (by the API; the enrollment CA by the orchestrator) and in
  // the tenant namespace (orchestrator).
  const { rows: refs } = await o.db.pools.mssp.query<{ namespace: string; name: string }>(
    'SELECT namespace, name FROM tenant_secrets WHERE tenant_id = $1',
    [id],
  );
  assert.deepEqual(refs.map((r) => r.namespace).sort(), [
    installNamespace,
    installNamespace,
    installNamespace,
    namespace,
    namespace,
    namespace,
    namespace,
    namespace,
    namespace,
    namespace,
  ]);
  for (const ref of refs) {
    assert.ok(await exists(secret(ref.namespace, ref.name)), `${ref.namespace}/${ref.name}`);
  }

  // Readiness (list Deployments, StatefulSets, PVCs as svc) passed, then the first heartbeat of
  // the tenant's adapter, run from the Secrets svc wrote into the namespace as itself.
  assert.deepEqual(await waitForStep(o, id, 'step:package_ready'), PROVISIONED_LIFECYCLE);
  const adapter = await o.runAdapter(slug);
  await adapter.adapter.waitForLog((l) => l.msg === 'the tenant is active (first heartbeat)');
  assert.equal((await tenantRow(o, id))?.state, 'active');

  // The release, read back as svc, and every object of its manifest exists: helm created the
  // tenant chart's ServiceAccount, NetworkPolicies, ResourceQuota, LimitRange, Services,
  // Deployments and StatefulSets as svc.
  const release = await o.deps.helm.status({ release: RELEASE_NAME, namespace });
  assert.equal(release?.status, 'deployed');
  const manifest = parseAllDocuments(
    await o.deps.helm.manifest({ release: RELEASE_NAME, namespace }),
  )
    .map((doc) => doc.toJS() as KubernetesObject | null)
    .filter((object): object is KubernetesObject => object !== null);
  const kinds = new Set(manifest.map((object) => object.kind));
  for (const kind of [
    'ServiceAccount',
    'NetworkPolicy',
    'ResourceQuota',
    'LimitRange',
    'Service',
    'Deployment',
    'StatefulSet',
  ]) {
    assert.ok(kinds.has(kind), `the tenant chart renders a ${kind}`);
  }
  for (const object of manifest) {
    const inNamespace = {
      ...object,
      metadata: { ...object.metadata, namespace: object.metadata?.namespace ?? namespace },
    };
    assert.ok(await exists(inNamespace), `${object.kind} ${object.metadata?.name} exists`);
  }
  const claims = await adminCore.listNamespacedPersistentVolumeClaim({ namespace });
  assert.ok(claims.items.length > 0);
  for (const claim of claims.items) {
    assert.equal(claim.status?.phase, 'Bound', `${claim.metadata?.name} bound`);
  }
});

test('§5.8 svc may not create a ConfigMap in default (RBAC: no namespaced rights outside its bindings)', async () => {
  const name = `svc-probe-${suffix}`;
  applied.push(configMap('default', name)); // deleted at the end, should the denial fail
  await assert.rejects(
    asSvc.create(configMap('default', name)),
    isRbacDenial('create', 'configmaps'),
  );
  assert.equal(await exists(configMap('default', name)), false);
});

test('§5.8 svc may not bind its tenant role in default (namespaced-writes policy; RBAC would allow it)', async () => {
  const name = `svc-probe-${suffix}`;
  const binding = roleBinding('default', name, tenantRole());
  applied.push(binding); // deleted at the end, should the denial fail
  await assert.rejects(
    asSvc.create(binding),
    isPolicyDenial(
      namespacedPolicy,
      'only in its own tenant namespaces (managed-by=svc, this install-id), not in default',
    ),
  );
  assert.equal(await exists(binding), false);
});

test('§5.8 svc may not read Secrets in kube-system or default (RBAC)', async () => {
  for (const namespace of ['kube-system', 'default']) {
    await assert.rejects(
      svcCore.listNamespacedSecret({ namespace }),
      isRbacDenial('list', 'secrets'),
      `list secrets in ${namespace}`,
    );
    await assert.rejects(
      svcCore.readNamespacedSecret({ namespace, name: 'anything' }),
      isRbacDenial('get', 'secrets'),
      `get a secret in ${namespace}`,
    );
  }
  await assert.rejects(svcCore.listSecretForAllNamespaces(), isRbacDenial('list', 'secrets'));
});

test('§2.5 svc may not create a tenant-x namespace without the tenant labels (tenant-namespaces policy)', async () => {
  const name = `tenant-x-${suffix}`;
  namespaces.add(name);
  await assert.rejects(
    asSvc.create(namespaceObject(name)),
    isPolicyDenial(namespacePolicy, 'must carry'),
  );
  assert.equal(await exists(namespaceObject(name)), false);
});

test('§5.8 svc may not delete, read, nor write into, a tenant namespace of another install-id', async () => {
  const name = `tenant-foreign-${suffix}`;
  namespaces.add(name);
  await admin.create(namespaceObject(name, tenantLabels({ 'install-id': randomUUID() })));
  // The other install's svc binds its own tenant role there; svc here holds nothing in it.
  await admin.create({
    ...roleBinding(name, 'svc', `svc-tenant.other-${suffix}`),
    subjects: [{ kind: 'ServiceAccount', name: 'svc', namespace: `other-${suffix}` }],
  } as KubernetesObject);
  await admin.create(secret(name, 'theirs'));
  await assert.rejects(
    asSvc.delete(namespaceObject(name)),
    isPolicyDenial(namespacePolicy, 'may only update or delete namespaces'),
  );
  await assert.rejects(
    svcCore.readNamespacedSecret({ namespace: name, name: 'theirs' }),
    isRbacDenial('get', 'secrets'),
  );
  await assert.rejects(
    svcCore.listNamespacedSecret({ namespace: name }),
    isRbacDenial('list', 'secrets'),
  );
  await assert.rejects(asSvc.create(secret(name, 'planted')), isRbacDenial('create', 'secrets'));
  // Nor can it bind itself in there: RBAC lets it bind its tenant role by name, the policy
  // refuses any namespace that is not this install's.
  await assert.rejects(
    asSvc.create(roleBinding(name, `svc-${suffix}`, tenantRole())),
    isPolicyDenial(namespacedPolicy, `not in ${name}`),
  );
  const ns = await adminCore.readNamespace({ name });
  assert.equal(ns.metadata?.deletionTimestamp, undefined);
  assert.equal(ns.status?.phase, 'Active');
});

test('§5.8 svc may not create a ClusterRole (RBAC), nor bind cluster-admin in its own tenant namespace (RBAC escalation check)', async () => {
  const name = `svc-probe-${suffix}`;
  applied.push(clusterRole(name, [])); // deleted at the end, should the denial fail
  await assert.rejects(
    asSvc.create(clusterRole(name, [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }])),
    isRbacDenial('create', 'clusterroles'),
  );
  assert.equal(await exists(clusterRole(name, [])), false);

  assert.ok(tenant, 'needs the tenant provisioned above');
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: `svc-probe-${suffix}`, namespace: tenant.namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: tenant.namespace }],
  } as KubernetesObject;
  await assert.rejects(asSvc.create(binding), (error: unknown) => {
    return (
      error instanceof ApiException &&
      error.code === 403 &&
      statusMessage(error).includes('is attempting to grant RBAC permissions not currently held')
    );
  });
});

test('§5.8 svc may not delete its own admission policies or their bindings (no RBAC on admissionregistration)', async () => {
  for (const base of policies) {
    const binding = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: policyName(base) },
    };
    await assert.rejects(
      asSvc.delete(binding),
      isRbacDenial('delete', 'validatingadmissionpolicybindings'),
    );
    assert.ok(await exists(binding), `${binding.metadata.name} still there`);
    const policy = { ...binding, kind: 'ValidatingAdmissionPolicy' };
    await assert.rejects(
      asSvc.delete(policy),
      isRbacDenial('delete', 'validatingadmissionpolicies'),
    );
    assert.ok(await exists(policy), `${policy.metadata.name} still there`);
  }
});

test('§5.8 second line: with RBAC widened by accident to ClusterRoles, the cluster-scoped policy still denies', {
  timeout: 90_000,
}, async () => {
  const widened = clusterRole(`svc-widened-${suffix}`, [
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['create'] },
  ]);
  const grant = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `svc-widened-${suffix}` },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: `svc-widened-${suffix}`,
    },
    subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace: installNamespace }],
  } as KubernetesObject;
  applied.push(await admin.create(widened), await admin.create(grant));
  // An empty ClusterRole passes RBAC's escalation check, so only the policy can refuse it.
  const probe = clusterRole(`svc-probe-empty-${suffix}`, []);
  try {
    await waitUntil(
      'the widened grant to reach RBAC and the policy to deny',
      () =>
        asSvc.create(probe).then(
          () => false,
          (error: unknown) =>
            isPolicyDenial(clusterPolicy, 'may not write cluster-scoped clusterroles')(error)
              ? true
              : undefined,
        ),
      60_000,
    );
    assert.equal(await exists(probe), false);
  } finally {
    await admin.delete(probe).catch(() => undefined);
    await admin.delete(grant);
    await admin.delete(widened);
  }
});

test('§8 the weekly adapter token rewrite first repairs a removed RoleBinding, then writes as svc', {
  timeout: 120_000,
}, async () => {
  assert.ok(tenant, 'needs the tenant provisioned above');
  const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.deleteNamespacedRoleBinding({ name: 'svc', namespace: tenant.namespace });
  const read = async () => {
    const s = await adminCore.readNamespacedSecret({
      name: 'svc-adapter-token',
      namespace: tenant?.namespace ?? '',
    });
    return Buffer.from(s.data?.token ?? '', 'base64').toString();
  };
  const before = await read();
  const weekLater = { ...o.deps, now: () => new Date(Date.now() + 8 * 86_400_000) };
  assert.equal(await refreshAdapterToken(weekLater, tenant.id), true);
  assert.notEqual(await read(), before, 'rewritten by svc itself');
  const binding = await rbac.readNamespacedRoleBinding({
    name: 'svc',
    namespace: tenant.namespace,
  });
  assert.equal(binding.roleRef.name, `svc-tenant.${installNamespace}`);
});

test('§3.1 svc decommissions its tenant as its own ServiceAccount: helm uninstall, namespace delete → soft-deleted', {
  timeout: 300_000,
}, async () => {
  assert.ok(tenant, 'needs the tenant provisioned above');
  const res = await o.admin.mssp.decommission({ params: { tenant_id: tenant.id } });
  assert.equal(res.status, 200);
  const row = await waitForState(o, tenant.id, 'soft-deleted', 240_000);
  assert.ok(row.deleted_at instanceof Date);
  // Read back as the admin: with the namespace gone, so is svc's RoleBinding in it, and svc may
  // no longer even look there.
  const adminHelm = createHelmRunner({
    binary: helmBinary,
    kubeconfigPath: cluster.kubeconfigPath,
  });
  assert.equal(
    await adminHelm.status({ release: RELEASE_NAME, namespace: tenant.namespace }),
    undefined,
  );
  assert.equal(await exists(namespaceObject(tenant.namespace)), false);
  await assert.rejects(
    svcCore.listNamespacedSecret({ namespace: tenant.namespace }),
    isRbacDenial('list', 'secrets'),
  );
  for (const name of Object.values(installSecretNames(tenant.id))) {
    assert.equal(await exists(secret(installNamespace, name)), false, `${name} removed`);
  }
});
