import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import type { SvcClient } from '../../contracts/index.ts';
import type { WebhookCreate } from '../../contracts/mssp/notifications.ts';
import { createSecretStore, type SecretStore } from '../../src/cluster/secrets.ts';
import {
  createNotificationService,
  type NotificationService,
} from '../../src/domains/notifications/notification-service.ts';
import type { OutboundPolicy } from '../../src/net/outbound-url.ts';
import { webhookJobs } from '../../src/workers/jobs/webhook-jobs.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { impersonating, problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { type Receiver, startReceiver, verifyStandardWebhook } from './receiver.ts';

// docs/notifications.md: outbound webhooks, signed as the Standard Webhooks specification
// describes, delivered by the job queue with retries, under the outbound guard.

/** The receivers listen on 127.0.0.1, which the install allows here as an operator would. */
const POLICY: OutboundPolicy = { allowCidrs: ['127.0.0.1/32'], allowHosts: [] };
/** A name that passes the write-time check and resolves, at send time, to a refused address. */
const REBOUND = 'hooks.rebind.example.test';

let db: TestDatabase;
let api: TestApi;
let namespace: string;
let secrets: SecretStore;
let core: CoreV1Api;
let receiver: Receiver;
/** Listens on 127.0.0.2, outside POLICY: whatever reaches it passed a refused address. */
let forbidden: Receiver;
let worker: NotificationService;
let tenantA: string;
let tenantB: string;
let admin: SvcClient;
let platform: SvcClient;
let analyst: SvcClient;

before(async () => {
  const cluster = getTestCluster();
  namespace = await createTestNamespace(cluster, 'install');
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  secrets = createSecretStore(cluster.kubeConfig, namespace);
  db = await createTestDatabase();
  receiver = await startReceiver();
  forbidden = await startReceiver('127.0.0.2');
  worker = createNotificationService({
    db: db.app,
    secrets,
    policy: POLICY,
    now: () => new Date(),
    retry: { baseMs: 50, capMs: 200, maxAttempts: 4 },
    timeoutMs: 5000,
    resolve: async (host) =>
      host === REBOUND ? [{ address: '127.0.0.2', family: 4 }] : [{ address: host, family: 4 }],
  });
  api = await startTestApi(db, {
    secrets,
    outbound: POLICY,
    hash: { params: TEST_HASH_PARAMS },
    workers: { jobs: webhookJobs(worker), schedules: [], pollIntervalMs: 100 },
  });
  tenantA = await createTenant(db.pools.app, 'hooks-a');
  tenantB = await createTenant(db.pools.app, 'hooks-b');
  admin = await signedInAs({ db, api }, 'mssp_admin');
  platform = await signedInAs({ db, api }, 'platform_admin');
  analyst = await signedInAs({ db, api }, 'analyst');
});
after(async () => {
  await api.close();
  await receiver.close();
  await forbidden.close();
  await db.drop();
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

async function tenantHook(tenantId: string, path: string, body: Partial<WebhookCreate> = {}) {
  const res = await admin.mssp.createTenantWebhook({
    params: { tenant_id: tenantId },
    body: {
      name: `hook ${path}`,
      url: `${receiver.url}${path}`,
      events: ['review.waiting'],
      ...body,
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  if (res.status !== 201) throw new Error('not created');
  receiver.expect(path, res.body.signing_secret);
  return res.body;
}

async function oldReview(tenantId: string, minutesAgo: number): Promise<string> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `WITH i AS (INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'Brute force', 'medium') RETURNING id)
     INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk, requested_by, requested_at)
     SELECT $1, i.id, 'block_ip', 'many failures', 'low', 'worker:test', now() - make_interval(mins => $2) FROM i
     RETURNING id`,
    [tenantId, minutesAgo],
  );
  return rows[0]?.id ?? '';
}

const on = (path: string) => receiver.received.filter((r) => r.path === path);

test('docs/notifications.md creating a webhook: a whsec_ secret answered once, kept in a Secret, the row holds only its reference; audited webhook.create', async () => {
  const created = await tenantHook(tenantA, '/create');
  assert.match(created.signing_secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  const bytes = Buffer.from(created.signing_secret.slice(6), 'base64').length;
  assert.ok(bytes >= 24 && bytes <= 64, `${bytes} random bytes`);
  const ref = created.webhook.signing_secret_ref;
  assert.deepEqual(
    { namespace: ref.namespace, key: ref.key, version: ref.version },
    { namespace, key: 'signing-secret', version: 1 },
  );
  assert.equal((await secrets.read(ref.name))?.['signing-secret'], created.signing_secret);
  const { rows } = await db.pools.mssp.query<Record<string, unknown>>(
    'SELECT * FROM tenant_webhooks WHERE id = $1',
    [created.webhook.id],
  );
  assert.ok(
    !JSON.stringify(rows).includes(created.signing_secret.slice(6)),
    'no secret in the row',
  );
  const read = await admin.mssp.getTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
  });
  assert.equal(read.status, 200);
  assert.ok(!JSON.stringify(read.body).includes(created.signing_secret.slice(6)));
  assert.deepEqual(read.status === 200 ? read.body.thresholds : undefined, {
    review_wait_minutes: 30,
    min_severity: 'high',
    adapter_silent_minutes: 15,
  });
  const audit = await db.pools.mssp.query<{ tenant_id: string; after: Record<string, unknown> }>(
    `SELECT tenant_id, after FROM audit_log WHERE action = 'webhook.create' AND resource_id = $1`,
    [created.webhook.id],
  );
  assert.equal(audit.rows.length, 1);
  assert.equal(audit.rows[0]?.tenant_id, tenantA);
  assert.ok(!JSON.stringify(audit.rows).includes(created.signing_secret.slice(6)));
});

test('Standard Webhooks: a test send is signed (webhook-id, webhook-timestamp, webhook-signature) and the receiver verifies it; the log shows the answer', async () => {
  const created = await tenantHook(tenantA, '/test-send');
  receiver.script({ status: 202, body: 'accepted by the test receiver' });
  const res = await admin.mssp.testTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
  });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.equal(res.body.delivered, true);
  assert.equal(res.body.attempt.status_code, 202);
  const [got] = on('/test-send');
  assert.ok(got);
  assert.equal(got.verified, true, 'the signature verifies under the secret answered at creation');
  assert.equal(got.id, res.body.attempt.delivery_id);
  assert.equal(got.contentType, 'application/json');
  assert.deepEqual(JSON.parse(got.body).type, 'webhook.test');
  // A wrong secret does not verify: the check can fail.
  assert.equal(
    verifyStandardWebhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, got, got.body),
    false,
  );
  const log = await admin.mssp.tenantWebhookDeliveries({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
  });
  assert.equal(log.status, 200);
  if (log.status !== 200) return;
  assert.equal(log.body.items.length, 1);
  const [entry] = log.body.items;
  assert.equal(entry?.status_code, 202);
  assert.equal(entry?.response_excerpt, 'accepted by the test receiver');
  assert.equal(entry?.error, null);
  assert.ok((entry?.duration_ms ?? -1) >= 0);
});

test('docs/notifications.md the slack format posts {text, blocks}, still signed', async () => {
  const created = await tenantHook(tenantA, '/slack', { format: 'slack' });
  const res = await admin.mssp.testTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
  });
  assert.equal(res.status, 200);
  const [got] = on('/slack');
  assert.ok(got?.verified);
  const body = JSON.parse(got?.body ?? '{}');
  assert.equal(typeof body.text, 'string');
  assert.ok(Array.isArray(body.blocks) && body.blocks.length > 0);
});

test('docs/notifications.md a 500 is retried after a backoff with the same webhook-id until the receiver takes it', async () => {
  const created = await tenantHook(tenantB, '/retry', { thresholds: { review_wait_minutes: 5 } });
  const review = await oldReview(tenantB, 10);
  receiver.script({ status: 500, body: 'down for maintenance' }, { status: 500 }, { status: 204 });
  const { queued } = await worker.sweep();
  assert.equal(queued, 1);
  const deliveries = await waitUntil('three attempts', async () =>
    on('/retry').length >= 3 ? on('/retry') : undefined,
  );
  assert.equal(new Set(deliveries.map((d) => d.id)).size, 1, 'one webhook-id for every attempt');
  assert.ok(deliveries.every((d) => d.verified));
  assert.equal(JSON.parse(deliveries[0]?.body ?? '{}').data.review_id, review);
  const row = await waitUntil('delivered', async () => {
    const { rows } = await db.pools.mssp.query<{ status: string; attempts: number }>(
      'SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = $1',
      [created.webhook.id],
    );
    return rows[0]?.status === 'delivered' ? rows[0] : undefined;
  });
  assert.equal(row.attempts, 3);
  const log = await admin.mssp.tenantWebhookDeliveries({
    params: { tenant_id: tenantB, webhook_id: created.webhook.id },
  });
  assert.equal(log.status, 200);
  if (log.status !== 200) return;
  assert.deepEqual(
    log.body.items.map((a) => [a.attempt, a.status_code]),
    [
      [3, 204],
      [2, 500],
      [1, 500],
    ],
  );
  assert.equal(log.body.items[2]?.response_excerpt, 'down for maintenance');
  // Found again, the same review notifies no more.
  assert.equal((await worker.sweep()).queued, 0);
  await admin.mssp.deleteTenantWebhook({
    params: { tenant_id: tenantB, webhook_id: created.webhook.id },
  });
});

test('docs/notifications.md retries stop at the cap: the delivery is failed after the last attempt', async () => {
  const tenant = await createTenant(db.pools.app, 'hooks-down');
  const created = await tenantHook(tenant, '/down', { thresholds: { review_wait_minutes: 5 } });
  await oldReview(tenant, 10);
  receiver.script(...Array.from({ length: 4 }, () => ({ status: 503 })));
  await worker.sweep();
  const row = await waitUntil('failed', async () => {
    const { rows } = await db.pools.mssp.query<{ status: string; attempts: number }>(
      'SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = $1',
      [created.webhook.id],
    );
    return rows[0]?.status === 'failed' ? rows[0] : undefined;
  });
  assert.equal(row.attempts, 4);
  assert.equal(on('/down').length, 4);
  await admin.mssp.deleteTenantWebhook({
    params: { tenant_id: tenant, webhook_id: created.webhook.id },
  });
});

test('docs/notifications.md the outbound guard refuses an internal URL when it is written: 422 webhook_url_refused, nothing written, no Secret', async () => {
  const before = await core.listNamespacedSecret({ namespace });
  for (const url of [
    'http://169.254.169.254/latest/meta-data',
    'http://10.0.0.5/hook',
    'http://127.0.0.2:8080/hook',
    'http://kubernetes.default.svc/',
    'ftp://hooks.example.test/',
    'https://user:pw@hooks.example.test/',
  ]) {
    const res = await admin.mssp.createTenantWebhook({
      params: { tenant_id: tenantA },
      body: { name: 'internal', url, events: ['drift.detected'] },
    });
    assert.equal(res.status, 422, url);
    assert.equal(problemCode(res), 'webhook_url_refused', url);
  }
  const { rows } = await db.pools.mssp.query(
    `SELECT 1 FROM tenant_webhooks WHERE name = 'internal'`,
  );
  assert.equal(rows.length, 0);
  const afterList = await core.listNamespacedSecret({ namespace });
  assert.equal(afterList.items.length, before.items.length);
  // A change to such a URL is refused the same way and leaves the webhook as it was.
  const created = await tenantHook(tenantA, '/patch-guard');
  const patched = await admin.mssp.updateTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
    body: { url: 'http://192.168.1.1/' },
  });
  assert.equal(patched.status, 422);
  assert.equal(problemCode(patched), 'webhook_url_refused');
  const read = await admin.mssp.getTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
  });
  assert.equal(read.status === 200 ? read.body.url : '', `${receiver.url}/patch-guard`);
});

test('docs/notifications.md the guard is checked again at send time: a name that now resolves to an internal address gets nothing', async () => {
  const port = new URL(forbidden.url).port;
  const res = await admin.mssp.createTenantWebhook({
    params: { tenant_id: tenantB },
    body: {
      name: 'rebound',
      url: `http://${REBOUND}:${port}/hook`,
      events: ['review.waiting'],
      thresholds: { review_wait_minutes: 5 },
    },
  });
  assert.equal(res.status, 201);
  if (res.status !== 201) return;
  await oldReview(tenantB, 10);
  await worker.sweep();
  const attempt = await waitUntil('a refused attempt', async () => {
    const { rows } = await db.pools.mssp.query<{
      error: string | null;
      status_code: number | null;
    }>(
      'SELECT error, status_code FROM tenant_webhook_attempts WHERE webhook_id = $1 ORDER BY id LIMIT 1',
      [res.body.webhook.id],
    );
    return rows[0];
  });
  assert.match(attempt.error ?? '', /outbound guard/);
  assert.equal(attempt.status_code, null);
  assert.equal(forbidden.received.length, 0, 'nothing reached the refused address');
  await admin.mssp.deleteTenantWebhook({
    params: { tenant_id: tenantB, webhook_id: res.body.webhook.id },
  });
});

test('docs/notifications.md a redirect is not followed: one request, a failed attempt', async () => {
  const created = await tenantHook(tenantA, '/redirect');
  receiver.script({ status: 307, headers: { location: `${receiver.url}/elsewhere` } });
  const res = await admin.mssp.testTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
  });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.equal(res.body.delivered, false);
  assert.match(res.body.attempt.error ?? '', /redirect/);
  assert.equal(on('/redirect').length, 1);
  assert.equal(on('/elsewhere').length, 0);
});

test('docs/notifications.md each trigger notifies once per occurrence; a raised severity is a new one', async () => {
  const tenant = await createTenant(db.pools.app, 'hooks-triggers');
  const install = await platform.mssp.createInstallWebhook({
    body: {
      name: 'everything',
      url: `${receiver.url}/install`,
      events: [
        'review.waiting',
        'provisioning.failed',
        'drift.detected',
        'adapter.silent',
        'llm.budget_exhausted',
        'incident.severity',
      ],
      thresholds: { review_wait_minutes: 5, adapter_silent_minutes: 5, min_severity: 'high' },
    },
  });
  assert.equal(install.status, 201);
  if (install.status !== 201) return;
  receiver.expect('/install', install.body.signing_secret);
  const m = db.pools.mssp;
  await oldReview(tenant, 10);
  await m.query(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, details, actor)
     VALUES ($1, 'error', 'namespace_created', '{"code":"helm_failed","message":"timed out"}', 'system:test'),
            ($1, 'drift', NULL, '{"findings":[{"object":"Secret","problem":"missing"}]}', 'system:test')`,
    [tenant],
  );
  await m.query(`UPDATE tenants SET state = 'active' WHERE id = $1`, [tenant]);
  await m.query(
    `INSERT INTO adapter_heartbeats (tenant_id, first_seen_at, last_seen_at, adapter_version)
     VALUES ($1, now() - interval '1 hour', now() - interval '20 minutes', '0.1.0')`,
    [tenant],
  );
  await m.query(
    `INSERT INTO llm_usage (tenant_id, day, refused_over_budget) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 3)`,
    [tenant],
  );
  const { rows } = await m.query<{ id: string }>(
    `INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'Ransomware note', 'high'),
            ($1, 'Port scan', 'low') RETURNING id`,
    [tenant],
  );
  const types = async () => {
    const list = on('/install')
      .map((r) => JSON.parse(r.body) as { type: string; data: { tenant_id: string } })
      .filter((n) => n.data.tenant_id === tenant)
      .map((n) => n.type)
      .sort();
    return list;
  };
  await worker.sweep();
  await worker.sweep();
  const expected = [
    'adapter.silent',
    'drift.detected',
    'incident.severity',
    'llm.budget_exhausted',
    'provisioning.failed',
    'review.waiting',
  ];
  await waitUntil('six notifications', async () =>
    (await types()).length >= expected.length ? true : undefined,
  );
  assert.deepEqual(await types(), expected);
  assert.ok(on('/install').every((r) => r.verified));
  // The same incident raised to critical is a new occurrence; a second sweep adds nothing more.
  await m.query(
    `UPDATE investigations SET severity = 'critical', updated_at = now() WHERE id = $1`,
    [rows[0]?.id],
  );
  assert.equal((await worker.sweep()).queued, 1);
  assert.equal((await worker.sweep()).queued, 0);
  await waitUntil('seven notifications', async () =>
    (await types()).length >= 7 ? true : undefined,
  );
  assert.deepEqual(
    (await types()).filter((t) => t === 'incident.severity'),
    ['incident.severity', 'incident.severity'],
  );
  // A new heartbeat ends the silence; silent again later, it notifies again.
  await m.query(
    `UPDATE adapter_heartbeats SET last_seen_at = now() - interval '10 minutes' WHERE tenant_id = $1`,
    [tenant],
  );
  assert.equal((await worker.sweep()).queued, 1);
  await admin.mssp.deleteInstallWebhook({ params: { webhook_id: install.body.webhook.id } });
});

test('§5.8 tenant A’s impersonation token never reads or changes tenant B’s webhooks; install webhooks are not for it', async () => {
  const ofB = await tenantHook(tenantB, '/isolated');
  const asA = await impersonating(api, admin, tenantA, 'webhook isolation');
  const listB = await asA.mssp.listTenantWebhooks({ params: { tenant_id: tenantB } });
  assert.equal(listB.status, 403);
  assert.equal(problemCode(listB), 'outside_impersonated_tenant');
  const probes = [
    await asA.mssp.getTenantWebhook({ params: { tenant_id: tenantA, webhook_id: ofB.webhook.id } }),
    await asA.mssp.updateTenantWebhook({
      params: { tenant_id: tenantA, webhook_id: ofB.webhook.id },
      body: { enabled: false },
    }),
    await asA.mssp.deleteTenantWebhook({
      params: { tenant_id: tenantA, webhook_id: ofB.webhook.id },
    }),
    await asA.mssp.tenantWebhookDeliveries({
      params: { tenant_id: tenantA, webhook_id: ofB.webhook.id },
    }),
    await asA.mssp.testTenantWebhook({
      params: { tenant_id: tenantA, webhook_id: ofB.webhook.id },
    }),
  ];
  assert.deepEqual(
    probes.map((p) => [p.status, problemCode(p)]),
    probes.map(() => [404, 'webhook_not_found']),
  );
  const direct = await asA.mssp.getTenantWebhook({
    params: { tenant_id: tenantB, webhook_id: ofB.webhook.id },
  });
  assert.equal(direct.status, 403);
  const install = await asA.mssp.listInstallWebhooks();
  assert.equal(install.status, 403);
  // Nothing changed and nothing was sent.
  const still = await admin.mssp.getTenantWebhook({
    params: { tenant_id: tenantB, webhook_id: ofB.webhook.id },
  });
  assert.equal(still.status === 200 ? still.body.enabled : undefined, true);
  assert.equal(on('/isolated').length, 0);
  // Staff of A's own session (no impersonation) reading through A's path: the same 404.
  const viaA = await admin.mssp.getTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: ofB.webhook.id },
  });
  assert.equal(viaA.status, 404);
});

test('§5.8 an analyst neither reads nor manages webhooks', async () => {
  const list = await analyst.mssp.listInstallWebhooks();
  assert.equal(list.status, 403);
  const create = await analyst.mssp.createTenantWebhook({
    params: { tenant_id: tenantA },
    body: { name: 'x', url: `${receiver.url}/x`, events: ['drift.detected'] },
  });
  assert.equal(create.status, 403);
  assert.equal(problemCode(create), 'forbidden');
});

test('docs/notifications.md bad bodies: 400 validation_failed, nothing written', async () => {
  const bodies: unknown[] = [
    { name: 'x', url: `${receiver.url}/x`, events: [] },
    { name: 'x', url: `${receiver.url}/x`, events: ['tenant.created'] },
    { name: 'x', url: `${receiver.url}/x`, events: ['drift.detected', 'drift.detected'] },
    { name: '', url: `${receiver.url}/x`, events: ['drift.detected'] },
    { name: 'x', url: `${receiver.url}/x`, events: ['drift.detected'], format: 'teams' },
    {
      name: 'x',
      url: `${receiver.url}/x`,
      events: ['drift.detected'],
      thresholds: { review_wait_minutes: 0 },
    },
    { name: 'x', url: `${receiver.url}/x`, events: ['drift.detected'], secret: 'mine' },
  ];
  for (const body of bodies) {
    const res = await admin.mssp.createTenantWebhook({
      params: { tenant_id: tenantA },
      body: body as never,
    });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(problemCode(res), 'validation_failed');
  }
  const { rows } = await db.pools.mssp.query(`SELECT 1 FROM tenant_webhooks WHERE name = 'x'`);
  assert.equal(rows.length, 0);
  const missing = await admin.mssp.getInstallWebhook({
    params: { webhook_id: '00000000-0000-4000-8000-000000000000' },
  });
  assert.equal(missing.status, 404);
  assert.equal(problemCode(missing), 'webhook_not_found');
  const noTenant = await admin.mssp.listTenantWebhooks({
    params: { tenant_id: '00000000-0000-4000-8000-000000000000' },
  });
  assert.equal(noTenant.status, 404);
  assert.equal(problemCode(noTenant), 'tenant_not_found');
});

test('docs/notifications.md disable, edit, delete: the Secret goes with the webhook; each change audited', async () => {
  const created = await tenantHook(tenantA, '/lifecycle');
  const disabled = await admin.mssp.updateTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
    body: { enabled: false, thresholds: { min_severity: 'critical' } },
  });
  assert.equal(disabled.status, 200);
  if (disabled.status !== 200) return;
  assert.equal(disabled.body.enabled, false);
  assert.deepEqual(disabled.body.thresholds, {
    review_wait_minutes: 30,
    min_severity: 'critical',
    adapter_silent_minutes: 15,
  });
  const removed = await admin.mssp.deleteTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
  });
  assert.equal(removed.status, 204);
  assert.equal(await secrets.read(created.webhook.signing_secret_ref.name), undefined);
  const again = await admin.mssp.deleteTenantWebhook({
    params: { tenant_id: tenantA, webhook_id: created.webhook.id },
  });
  assert.equal(again.status, 404);
  const { rows } = await db.pools.mssp.query<{ action: string }>(
    `SELECT action FROM audit_log WHERE resource_type = 'webhook' AND resource_id = $1 ORDER BY "timestamp", id`,
    [created.webhook.id],
  );
  assert.deepEqual(
    rows.map((r) => r.action),
    ['webhook.create', 'webhook.update', 'webhook.delete'],
  );
});

test('docs/notifications.md without a cluster (npm start on the embedded database) a webhook cannot be created: 503 cluster_unavailable, nothing written', async () => {
  const bare = await startTestApi(db, { outbound: POLICY, hash: { params: TEST_HASH_PARAMS } });
  try {
    const staff = await signedInAs({ db, api: bare }, 'mssp_admin');
    const res = await staff.mssp.createInstallWebhook({
      body: { name: 'no cluster', url: `${receiver.url}/none`, events: ['drift.detected'] },
    });
    assert.equal(res.status, 503);
    assert.equal(problemCode(res), 'cluster_unavailable');
    const { rows } = await db.pools.mssp.query(
      `SELECT 1 FROM install_webhooks WHERE name = 'no cluster'`,
    );
    assert.equal(rows.length, 0);
  } finally {
    await bare.close();
  }
});
