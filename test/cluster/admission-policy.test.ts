import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import {
  AdmissionregistrationV1Api,
  ApiException,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { createTestNamespace, serviceAccountKubeconfig } from '../../testcluster/harness.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const denial = 'service accounts may not create ConfigMaps here';

function isDenial(error: unknown): boolean {
  return error instanceof ApiException && error.code === 403 && String(error.body).includes(denial);
}

test('harness: ValidatingAdmissionPolicy denies a ServiceAccount and allows admin', {
  timeout: 120_000,
}, async (t) => {
  const cluster = getTestCluster();
  const namespace = await createTestNamespace(cluster, 'vap');
  const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'configmap-writer' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'writer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-writer' },
      subjects: [{ kind: 'ServiceAccount', name: 'writer', namespace }],
    },
  });

  // Policies are cluster-scoped: a unique name and a binding limited to this namespace keep
  // concurrent test files out of each other's way.
  const name = `deny-sa-configmaps-${randomBytes(3).toString('hex')}`;
  const admission = cluster.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [''],
              apiVersions: ['v1'],
              operations: ['CREATE'],
              resources: ['configmaps'],
            },
          ],
        },
        validations: [
          {
            expression: "!request.userInfo.username.startsWith('system:serviceaccount:')",
            message: denial,
            reason: 'Forbidden',
          },
        ],
      },
    },
  });
  t.after(() => admission.deleteValidatingAdmissionPolicy({ name }));
  await admission.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name },
      spec: {
        policyName: name,
        validationActions: ['Deny'],
        matchResources: {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
        },
      },
    },
  });
  t.after(() => admission.deleteValidatingAdmissionPolicyBinding({ name }));

  const asServiceAccount = new KubeConfig();
  asServiceAccount.loadFromFile(await serviceAccountKubeconfig(cluster, namespace, 'writer'));
  const saCore = asServiceAccount.makeApiClient(CoreV1Api);
  const configMap = (cmName: string): V1ConfigMap => ({
    metadata: { name: cmName },
    data: { k: 'v' },
  });

  // The policy reaches the admission plugin through an informer; a dry run shows when it has.
  await waitUntil('the policy to take effect', async () => {
    try {
      await saCore.createNamespacedConfigMap({
        namespace,
        body: configMap('probe'),
        dryRun: 'All',
      });
      return undefined;
    } catch (error) {
      if (isDenial(error)) {
        return true;
      }
      throw error;
    }
  });

  await assert.rejects(
    saCore.createNamespacedConfigMap({ namespace, body: configMap('from-sa') }),
    isDenial,
  );
  const adminCore = cluster.kubeConfig.makeApiClient(CoreV1Api);
  const created = await adminCore.createNamespacedConfigMap({
    namespace,
    body: configMap('from-admin'),
  });
  assert.equal(created.metadata?.name, 'from-admin');
  const list = await adminCore.listNamespacedConfigMap({ namespace });
  assert.deepEqual(
    list.items.map((item) => item.metadata?.name).filter((n) => n?.startsWith('from-')),
    ['from-admin'],
  );
});
