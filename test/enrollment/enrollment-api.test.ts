import assert from 'node:assert/strict';
import { randomUUID, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { createSvcClient } from '../../contracts/index.ts';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import {
  ENROLLMENT_TLS_REVISION,
  MANAGER_STATEFULSET,
} from '../../src/orchestrator/enrollment-cluster.ts';
import {
  ENROLLMENT_CA_KEYS,
  ENROLLMENT_TLS_SECRET,
  enrollmentNamesOf,
  enrollmentTlsRevision,
} from '../../src/orchestrator/enrollment-pki.ts';
import { reconcileTenant } from '../../src/orchestrator/reconcile.ts';
import { auditRows } from '../internal/support.ts';
import { activeTenant, useOrchestration } from '../provisioning/support.ts';
import { impersonating, problemCode } from '../support/api.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs } from '../support/sign-in.ts';

// Agent enrollment for the MSSP (docs/enrollment.md) against a tenant svc provisioned on the
// test cluster: the reveal (who may, what it answers, its audit row, no-store), the enrollment
// certificate following the manager's load-balancer address, and the password's rotation, also
// from the attacker's side (other roles, impersonation tokens, customers, other tenants).

const o = useOrchestration();
const LB_IP = '203.0.113.10';
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let tenant: { id: string; slug: string; namespace: string } | undefined;

async function provisioned() {
  if (!tenant) {
    const { id, slug } = await activeTenant(o, 'enr');
    tenant = { id, slug, namespace: `tenant-${slug}` };
  }
  return tenant;
}

async function secret(namespace: string, name: string): Promise<Record<string, string>> {
  const s = await o.core.readNamespacedSecret({ name, namespace });
  return Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
}

async function manager(namespace: string) {
  return o.apps.readNamespacedStatefulSet({ name: MANAGER_STATEFULSET, namespace });
}

async function enrollmentAudit(id: string) {
  return (await auditRows(o.db, id)).filter((r) => r.action.startsWith('tenant.enrollment.'));
}

test('§5.8 enrollment: an mssp_admin gets the manager address and ports, the password, the CA and install commands; no-store; audited tenant.enrollment.reveal without the secret', {
  timeout: 400_000,
}, async () => {
  const t = await provisioned();
  const params = { tenant_id: t.id };
  const bundle = await secret(o.installNamespace, installSecretNames(t.id).bootstrap);
  const ca = await secret(o.installNamespace, installSecretNames(t.id).enrollmentCa);

  // No load balancer has given the Service an address yet: the answer says so.
  const pending = await o.admin.mssp.getEnrollment({ params });
  assert.equal(pending.status, 200, JSON.stringify(pending.body));
  if (pending.status !== 200) return;
  assert.equal(pending.headers.get('cache-control'), 'no-store');
  assert.equal(pending.body.manager.status, 'pending');
  assert.match(pending.body.manager.pending_reason ?? '', /no load-balancer address yet/);
  assert.deepEqual(pending.body.manager.ports, { events: 1514, enrollment: 1515 });
  assert.equal(pending.body.commands, null);
  assert.equal(pending.body.password, bundle['monitor-enrollment-secret']);
  assert.equal(pending.body.ca_pem, ca[ENROLLMENT_CA_KEYS.ca]);

  // The cloud's controller assigns the address (here written by the test, as the controller
  // would): the answer names it and the commands appear.
  await o.core.patchNamespacedServiceStatus(
    {
      name: 'monitor',
      namespace: t.namespace,
      body: { status: { loadBalancer: { ingress: [{ ip: LB_IP }] } } },
    },
    MERGE,
  );
  const ready = await o.admin.mssp.getEnrollment({ params });
  assert.equal(ready.status, 200);
  if (ready.status !== 200) return;
  assert.equal(ready.headers.get('cache-control'), 'no-store');
  assert.deepEqual(ready.body.manager, {
    mode: 'loadbalancer',
    status: 'ready',
    pending_reason: null,
    addresses: [LB_IP],
    ports: { events: 1514, enrollment: 1515 },
  });
  assert.equal(ready.body.agent_version, '4.9.2');
  for (const script of Object.values(ready.body.commands ?? {})) {
    assert.ok(script.includes(LB_IP));
    assert.ok(script.includes(bundle['monitor-enrollment-secret'] ?? '?'));
    assert.ok(script.includes(ca[ENROLLMENT_CA_KEYS.ca]?.trimEnd() ?? '?'));
  }

  const me = await o.admin.auth.me();
  assert.equal(me.status, 200);
  const rows = await enrollmentAudit(t.id);
  assert.equal(rows.length, 2);
  for (const row of rows) {
    assert.equal(row.action, 'tenant.enrollment.reveal');
    assert.equal(row.actor_principal, 'User');
    assert.equal(row.actor_id, me.status === 200 ? me.body.identity.user_id : '?');
    assert.equal(row.resource_id, `${o.installNamespace}/${installSecretNames(t.id).bootstrap}`);
  }
  const { rows: raw } = await o.db.pools.mssp.query<{ row: string; at: Date }>(
    `SELECT row_to_json(a)::text AS row, a."timestamp" AS at FROM audit_log a
      WHERE tenant_id = $1 AND action = 'tenant.enrollment.reveal'`,
    [t.id],
  );
  for (const { row, at } of raw) {
    assert.ok(Date.now() - at.getTime() < 600_000, 'when: the reveal’s own time');
    assert.ok(!row.includes(bundle['monitor-enrollment-secret'] ?? '?'), 'no password');
    assert.ok(!row.includes('BEGIN'), 'no certificate or key');
  }
});

test('enrollment TLS: provisioning issued the manager’s certificate from the tenant CA; a reconcile pass adds the load-balancer address and rolls the manager once', {
  timeout: 400_000,
}, async () => {
  const t = await provisioned();
  await o.core.patchNamespacedServiceStatus(
    {
      name: 'monitor',
      namespace: t.namespace,
      body: { status: { loadBalancer: { ingress: [{ ip: LB_IP }] } } },
    },
    MERGE,
  );
  const ca = await secret(o.installNamespace, installSecretNames(t.id).enrollmentCa);
  const caCert = new X509Certificate(ca[ENROLLMENT_CA_KEYS.ca] ?? '');
  const before = await secret(t.namespace, ENROLLMENT_TLS_SECRET.name);
  assert.ok(new X509Certificate(before['sslmanager.cert'] ?? '').verify(caCert.publicKey));

  await reconcileTenant(o.deps, t.id);
  const after = await secret(t.namespace, ENROLLMENT_TLS_SECRET.name);
  const cert = new X509Certificate(after['sslmanager.cert'] ?? '');
  assert.ok(cert.verify(caCert.publicKey), 'the same CA: agents installed before still enroll');
  assert.deepEqual(
    enrollmentNamesOf(cert).sort(),
    [`monitor.${t.namespace}.svc`, `monitor.${t.namespace}.svc.cluster.local`, LB_IP].sort(),
  );
  const rolled = await manager(t.namespace);
  assert.equal(
    rolled.spec?.template?.metadata?.annotations?.[ENROLLMENT_TLS_REVISION],
    enrollmentTlsRevision(after),
  );
  // Nothing left to do: the next pass writes nothing and rolls nothing (the spec's generation
  // stays; the status the controllers write does not count).
  await reconcileTenant(o.deps, t.id);
  const again = await manager(t.namespace);
  assert.equal(again.metadata?.generation, rolled.metadata?.generation);
  assert.equal(
    (await secret(t.namespace, ENROLLMENT_TLS_SECRET.name))['sslmanager.cert'],
    after['sslmanager.cert'],
  );
});

test('§5.8 :rotate-enrollment: a new password in a new Secret version, the manager restarts onto it, the reveal returns it; audited without the secret', {
  timeout: 400_000,
}, async () => {
  const t = await provisioned();
  const params = { tenant_id: t.id };
  const first = await o.admin.mssp.getEnrollment({ params });
  assert.equal(first.status, 200);
  if (first.status !== 200) return;
  const old = first.body.password;

  const res = await o.admin.mssp.rotateEnrollment({ params });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  if (res.status !== 202) return;
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.body.secret_version, first.body.secret_version + 1);
  assert.equal(res.body.manager_rollout, 'started');

  // "Refused" here: the manager reads authd.pass when it starts; the Secret it mounts holds only
  // the new password and its pod template changed, so every manager pod from now on has it.
  const mounted = await secret(t.namespace, 'svc-bootstrap');
  const held = await secret(o.installNamespace, installSecretNames(t.id).bootstrap);
  const fresh = mounted['monitor-enrollment-secret'];
  assert.ok(fresh && fresh !== old);
  assert.equal(held['monitor-enrollment-secret'], fresh);
  assert.ok(!Object.values(mounted).includes(old));
  const sts = await manager(t.namespace);
  assert.equal(
    sts.spec?.template?.metadata?.annotations?.['svc/enrollment-secret-version'],
    String(res.body.secret_version),
  );
  // The other components' passwords did not change.
  assert.equal(held['monitor-bootstrap-password'], mounted['monitor-bootstrap-password']);

  const after = await o.admin.mssp.getEnrollment({ params });
  assert.equal(after.status, 200);
  if (after.status !== 200) return;
  assert.equal(after.body.password, fresh);
  assert.equal(after.body.secret_version, res.body.secret_version);
  assert.ok(Object.values(after.body.commands ?? {}).every((s) => s.includes(fresh)));

  const rotations = (await enrollmentAudit(t.id)).filter(
    (r) => r.action === 'tenant.enrollment.rotate',
  );
  assert.equal(rotations.length, 1);
  assert.deepEqual(
    [rotations[0]?.before, rotations[0]?.after],
    [{ secret_version: first.body.secret_version }, { secret_version: res.body.secret_version }],
  );
  const text = JSON.stringify(rotations);
  assert.ok(!text.includes(fresh) && !text.includes(old), 'no password in the audit row');
  const { rows } = await o.db.pools.mssp.query<{ version: number }>(
    `SELECT version FROM tenant_secrets WHERE tenant_id = $1 AND purpose = 'bootstrap'`,
    [t.id],
  );
  assert.equal(rows[0]?.version, res.body.secret_version);
});

test('§5.8 enrollment from the attacker’s side: analysts 403, impersonation tokens 403, customers 403, no session 401, unknown tenant 404, a tenant that is not active 409; none audited', {
  timeout: 400_000,
}, async () => {
  const t = await provisioned();
  const params = { tenant_id: t.id };
  const audited = (await enrollmentAudit(t.id)).length;
  const versions = async () =>
    (
      await o.db.pools.mssp.query<{ version: number }>(
        `SELECT version FROM tenant_secrets WHERE tenant_id = $1 ORDER BY purpose`,
        [t.id],
      )
    ).rows;
  const versionsBefore = await versions();
  const passwordBefore = (await secret(t.namespace, 'svc-bootstrap'))['monitor-enrollment-secret'];

  const analyst = await signedInAs(o, 'analyst');
  for (const res of [
    await analyst.mssp.getEnrollment({ params }),
    await analyst.mssp.rotateEnrollment({ params }),
  ]) {
    assert.equal(res.status, 403);
    assert.equal(problemCode(res), 'forbidden');
  }

  const token = await impersonating(o.api, o.admin, t.id, 'support ticket 4711');
  for (const res of [
    await token.mssp.getEnrollment({ params }),
    await token.mssp.rotateEnrollment({ params }),
  ]) {
    assert.equal(res.status, 403);
    assert.equal(problemCode(res), 'outside_impersonated_tenant');
  }

  // A customer of this tenant, and one of another: the MSSP family is not theirs.
  const other = await createTenant(o.db.pools.app, `enr-other-${randomUUID().slice(0, 6)}`);
  for (const tenantId of [t.id, other]) {
    const customer = await signedInAs(o, 'customer_viewer', { tenantId });
    for (const res of [
      await customer.mssp.getEnrollment({ params }),
      await customer.mssp.rotateEnrollment({ params }),
    ]) {
      assert.equal(res.status, 403);
      assert.equal(problemCode(res), 'wrong_family');
    }
  }
  const anonymous = createSvcClient({ baseUrl: o.api.url, headers: { origin: o.api.origin } });
  assert.equal((await anonymous.mssp.getEnrollment({ params })).status, 401);
  assert.equal((await anonymous.mssp.rotateEnrollment({ params })).status, 401);

  const unknown = { tenant_id: randomUUID() };
  for (const res of [
    await o.admin.mssp.getEnrollment({ params: unknown }),
    await o.admin.mssp.rotateEnrollment({ params: unknown }),
  ]) {
    assert.equal(res.status, 404);
    assert.equal(problemCode(res), 'tenant_not_found');
  }
  // A tenant row that never got past pending: no manager to enroll with.
  for (const res of [
    await o.admin.mssp.getEnrollment({ params: { tenant_id: other } }),
    await o.admin.mssp.rotateEnrollment({ params: { tenant_id: other } }),
  ]) {
    assert.equal(res.status, 409);
    assert.equal(problemCode(res), 'invalid_state');
    assert.equal((res.body as { state?: string }).state, 'pending');
  }
  assert.equal((await enrollmentAudit(t.id)).length, audited);
  assert.equal((await enrollmentAudit(other)).length, 0);
  assert.deepEqual(await versions(), versionsBefore);
  assert.equal(
    (await secret(t.namespace, 'svc-bootstrap'))['monitor-enrollment-secret'],
    passwordBefore,
  );
});

test('enrollment: a tenant whose enrollment CA svc has not written (one provisioned before it existed) is 409 enrollment_not_ready, until the next reconcile pass writes it', {
  timeout: 400_000,
}, async () => {
  const t = await provisioned();
  const params = { tenant_id: t.id };
  const caName = installSecretNames(t.id).enrollmentCa;
  await o.deps.secrets.remove(caName);
  const before = (await enrollmentAudit(t.id)).length;
  const refused = await o.admin.mssp.getEnrollment({ params });
  assert.equal(refused.status, 409);
  assert.equal(problemCode(refused), 'enrollment_not_ready');
  assert.equal((await enrollmentAudit(t.id)).length, before, 'a refusal is not audited');

  await reconcileTenant(o.deps, t.id);
  const ca = await secret(o.installNamespace, caName);
  const res = await o.admin.mssp.getEnrollment({ params });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.equal(res.body.ca_pem, ca[ENROLLMENT_CA_KEYS.ca]);
  // The manager's certificate followed the new CA, and the manager rolled onto it.
  const tls = await secret(t.namespace, ENROLLMENT_TLS_SECRET.name);
  const caCert = new X509Certificate(ca[ENROLLMENT_CA_KEYS.ca] ?? '');
  assert.ok(new X509Certificate(tls['sslmanager.cert'] ?? '').verify(caCert.publicKey));
  assert.equal(
    (await manager(t.namespace)).spec?.template?.metadata?.annotations?.[ENROLLMENT_TLS_REVISION],
    enrollmentTlsRevision(tls),
  );
});
