import { readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
} from '@kubernetes/client-node';
import { mergeValues, renderSystemChart, sampleValues } from './system-chart.ts';

/**
 * What `helm install svc charts/svc-system` gives svc on a real cluster, minus the workloads:
 * the install namespace, svc's ServiceAccount, its RBAC (the cluster-wide ClusterRole, the
 * tenant ClusterRole svc binds in each tenant namespace, the install-namespace Role) and the
 * admission policies, all rendered from the chart itself with this install's ids. svc then
 * runs outside the cluster as that ServiceAccount, through a kubeconfig holding its token, so
 * a local run is confined exactly as an install is.
 */
export interface InstallIdentity {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly msspId: string;
  readonly installId: string;
  /** A kubeconfig acting as the ServiceAccount. */
  readonly kubeconfigPath: string;
}

export interface InstallIdentityOptions {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly msspId: string;
  readonly installId: string;
  /** The helm binary that renders the chart. */
  readonly helm: string;
  readonly timeoutMs?: number;
}

const policiesDir = fileURLToPath(new URL('../policies', import.meta.url));
const APPLY_ORDER = [
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
];

/** The chart's identity and confinement templates, rendered for this install, in apply order. */
async function identityManifests(options: InstallIdentityOptions): Promise<KubernetesObject[]> {
  const values = mergeValues(
    sampleValues(options.namespace, { msspId: options.msspId, installId: options.installId }),
    { serviceAccount: { name: options.serviceAccount }, admission: { engine: 'vap' } },
  );
  const admission = (await readdir(policiesDir))
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => `templates/admission/${file}`);
  const docs = await renderSystemChart(options.helm, options.namespace, values, [
    'templates/serviceaccount.yaml',
    'templates/rbac.yaml',
    ...admission,
  ]);
  const unknown = docs.find((doc) => !APPLY_ORDER.includes(doc.kind ?? ''));
  if (unknown) throw new Error(`install identity: unexpected ${unknown.kind} in the chart`);
  return docs.sort((a, b) => APPLY_ORDER.indexOf(a.kind ?? '') - APPLY_ORDER.indexOf(b.kind ?? ''));
}

/**
 * A token that does not expire while a long demo runs (a TokenRequest token would after an
 * hour): the legacy Secret of type service-account-token, filled by the controller-manager.
 */
async function serviceAccountToken(
  core: CoreV1Api,
  namespace: string,
  serviceAccount: string,
  deadline: number,
): Promise<string> {
  const name = `${serviceAccount}-token`;
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name, annotations: { 'kubernetes.io/service-account.name': serviceAccount } },
      type: 'kubernetes.io/service-account-token',
    },
  });
  for (;;) {
    const secret = await core.readNamespacedSecret({ namespace, name });
    const token = secret.data?.token;
    if (token) return Buffer.from(token, 'base64').toString('utf8');
    if (Date.now() > deadline) throw new Error(`install identity: Secret ${name} got no token`);
    await sleep(200);
  }
}

/** Polls until the ServiceAccount may write a Secret in its namespace (RBAC is in force). */
async function waitForRbac(kubeConfig: KubeConfig, namespace: string, deadline: number) {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  for (;;) {
    try {
      await core.createNamespacedSecret({
        namespace,
        dryRun: 'All',
        body: { metadata: { name: 'rbac-probe' }, stringData: { probe: 'x' } },
      });
      return;
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 403)) throw error;
      if (Date.now() > deadline) throw new Error('install identity: RBAC never took effect');
      await sleep(200);
    }
  }
}

/** Creates the install namespace and the chart's identity; returns svc's kubeconfig. */
export async function createInstallIdentity(
  adminKubeconfigPath: string,
  options: InstallIdentityOptions,
): Promise<InstallIdentity> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const admin = new KubeConfig();
  admin.loadFromFile(adminKubeconfigPath);
  const core = admin.makeApiClient(CoreV1Api);
  const objects = KubernetesObjectApi.makeApiClient(admin);
  await core.createNamespace({ body: { metadata: { name: options.namespace } } });
  for (const manifest of await identityManifests(options)) await objects.create(manifest);
  const token = await serviceAccountToken(
    core,
    options.namespace,
    options.serviceAccount,
    deadline,
  );
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('install identity: the admin kubeconfig names no cluster');
  const user = `system:serviceaccount:${options.namespace}:${options.serviceAccount}`;
  const asSvc = new KubeConfig();
  asSvc.loadFromOptions({
    clusters: [{ ...cluster, name: 'local' }],
    users: [{ name: user, token }],
    contexts: [{ name: 'svc', cluster: 'local', user }],
    currentContext: 'svc',
  });
  const kubeconfigPath = join(dirname(adminKubeconfigPath), `${options.serviceAccount}.kubeconfig`);
  await writeFile(kubeconfigPath, asSvc.exportConfig(), { mode: 0o600 });
  await waitForRbac(asSvc, options.namespace, deadline);
  const { namespace, serviceAccount, msspId, installId } = options;
  return { namespace, serviceAccount, msspId, installId, kubeconfigPath };
}
