import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import type { TenantConfig } from '../../contracts/tenant-config.ts';
import type {
  StoredTenantConfig,
  TenantConfigUpdate,
} from '../../contracts/tenant-config-revisions.ts';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import {
  createTenantVia,
  tenantConfig,
  uniqueSlug,
  useOrchestration,
} from '../provisioning/support.ts';
import { impersonating, problemCode } from '../support/api.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs } from '../support/sign-in.ts';

// The orchestrator is not started: these tests are about what the API accepts and writes. A
// rollout's end is played by SQL where a test needs the next change (settle()); the real
// rollout is test/provisioning/config-revisions.test.ts.
const o = useOrchestration({ run: false });

const SIEM = { kind: 'siem', name: 'main', endpoint_url: 'https://siem.example.test' };

/** A tenant created through the API (revision 1, real Secrets), then marked active. */
async function activeTenant(extra: Partial<TenantConfig> = {}) {
  const slug = uniqueSlug('cfg');
  const config = tenantConfig(slug, extra);
  const id = await createTenantVia(o, config);
  await o.db.pools.mssp.query(
    `UPDATE tenants SET state = 'active', chart_version = '0.1.0' WHERE id = $1`,
    [id],
  );
  return { id, slug, config };
}

/** A stored configuration as a PUT body: the secret flags dropped (secrets left out are kept). */
function asUpdate(stored: StoredTenantConfig): TenantConfigUpdate {
  const { llm, integrations, ...rest } = stored;
  const body: TenantConfigUpdate = { ...rest };
  if (llm) {
    const { has_api_key: _, ...settings } = llm;
    body.llm = settings;
  }
  if (integrations) {
    body.integrations = {
      ...integrations,
      ...(integrations.items
        ? { items: integrations.items.map(({ has_credential: _, ...item }) => item) }
        : {}),
    };
  }
  return body;
}

async function current(id: string): Promise<TenantConfigUpdate> {
  const res = await o.admin.mssp.getConfig({ params: { tenant_id: id } });
  assert.equal(res.status, 200);
  if (res.status !== 200) throw new Error('unreachable');
  return asUpdate(res.body.config);
}

/** The orchestrator's part, as its success records it: the target becomes the applied revision. */
async function settle(id: string): Promise<void> {
  await o.db.pools.mssp.query(
    `UPDATE tenants SET config_revision = config_target, config_target = NULL
      WHERE id = $1 AND config_target IS NOT NULL`,
    [id],
  );
}

/** Everything a refused change must leave as it was. */
async function written(id: string) {
  const { rows } = await o.db.pools.mssp.query(
    `SELECT t.config_revision, t.config_target, t.display_name,
            (SELECT count(*)::int FROM tenant_lifecycle_events e
              WHERE e.tenant_id = t.id AND e.kind = 'config_revision') AS revisions,
            (SELECT count(*)::int FROM audit_log a
              WHERE a.tenant_id = t.id AND a.action LIKE 'tenant.config.%') AS audits,
            (SELECT coalesce(max(version), 0) FROM tenant_secrets s WHERE s.tenant_id = t.id) AS secret_versions
       FROM tenants t WHERE t.id = $1`,
    [id],
  );
  const names = installSecretNames(id);
  const read = (name: string) =>
    o.core
      .readNamespacedSecret({ name, namespace: o.installNamespace })
      .then((s) => ({ data: s.data ?? {}, version: s.metadata?.resourceVersion }))
      .catch(() => null);
  return { row: rows[0], llm: await read(names.llm), integrations: await read(names.integrations) };
}

async function putConfig(client: SvcClient, id: string, body: unknown) {
  return client.mssp.putConfig({ params: { tenant_id: id }, body: body as TenantConfigUpdate });
}

async function refused(
  id: string,
  body: unknown,
  expected: [number, string],
  client: SvcClient = o.admin,
): Promise<void> {
  const before = await written(id);
  const res = await putConfig(client, id, body);
  const label = JSON.stringify(body).slice(0, 160);
  assert.deepEqual(
    [res.status, problemCode(res)],
    expected,
    `${label} → ${JSON.stringify(res.body).slice(0, 400)}`,
  );
  assert.deepEqual(await written(id), before, `${label}: something was written`);
}

test('issue 15 / §6.2 GET …/config: the applied configuration without secret values, revision 1, nothing pending', async () => {
  const { id, config } = await activeTenant({
    integrations: { items: [{ ...SIEM, credential: 'siem-secret-1' }] },
  });
  const res = await o.admin.mssp.getConfig({ params: { tenant_id: id } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual([res.body.tenant_id, res.body.revision, res.body.pending], [id, 1, null]);
  assert.equal(res.body.config.llm?.has_api_key, true);
  assert.equal(res.body.config.integrations?.items?.[0]?.has_credential, true);
  const text = JSON.stringify(res.body);
  assert.ok(!text.includes(config.llm?.api_key ?? '?'), 'the LLM key never leaves svc');
  assert.ok(!text.includes('siem-secret-1'), 'nor does an integration credential');

  const analyst = await signedInAs(o, 'analyst');
  assert.equal((await analyst.mssp.getConfig({ params: { tenant_id: id } })).status, 200);
  const missing = await o.admin.mssp.getConfig({
    params: { tenant_id: '00000000-0000-4000-8000-000000000000' },
  });
  assert.deepEqual([missing.status, problemCode(missing)], [404, 'tenant_not_found']);
});

test('issue 15: a PUT equal to the applied configuration writes nothing and answers 200 with the current revision', async () => {
  const { id } = await activeTenant();
  const before = await written(id);
  const body = await current(id);
  const res = await putConfig(o.admin, id, { ...body, expected_revision: 1 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  if (res.status === 200) assert.deepEqual([res.body.revision, res.body.pending], [1, null]);
  assert.deepEqual(await written(id), before);
});

test('issue 15 / §6.2 an accepted change is revision n+1: a secret-free config_revision event, the rollout target, audit tenant.config.update with before/after', async () => {
  const { id } = await activeTenant();
  const body = await current(id);
  const res = await putConfig(o.admin, id, {
    ...body,
    display_name: 'Renamed Customer',
    components: {
      cases: { requests: { cpu: '250m', memory: '768Mi' }, limits: { cpu: '1', memory: '1536Mi' } },
      analyzers: ['VirusTotal_3_1'],
    },
    monitor_ingress: { mode: 'loadbalancer', hostname: 'events.example.test' },
    expected_revision: 1,
  });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  if (res.status !== 202) return;
  // The applied configuration is still revision 1; revision 2 is pending.
  assert.equal(res.body.revision, 1);
  assert.equal(res.body.config.display_name, body.display_name);
  assert.equal(res.body.pending?.revision, 2);
  assert.equal(res.body.pending?.outcome, 'pending');
  assert.deepEqual(res.body.pending?.config.components?.analyzers, ['VirusTotal_3_1']);
  assert.equal(res.body.pending?.config.llm?.has_api_key, true, 'the key was kept');

  const { rows } = await o.db.pools.mssp.query<{
    config_revision: number;
    config_target: number;
    display_name: string;
  }>('SELECT config_revision, config_target, display_name FROM tenants WHERE id = $1', [id]);
  assert.deepEqual(rows[0], {
    config_revision: 1,
    config_target: 2,
    display_name: body.display_name,
  });
  const events = await o.db.pools.mssp.query<{ config_revision: number; actor: string }>(
    `SELECT config_revision, actor FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND kind = 'config_revision' ORDER BY config_revision`,
    [id],
  );
  assert.deepEqual(
    events.rows.map((e) => e.config_revision),
    [1, 2],
  );
  assert.match(events.rows[1]?.actor ?? '', /^user:/);
  const audit = await o.db.pools.mssp.query<{
    before: { revision: number };
    after: { revision: number; config: StoredTenantConfig };
  }>(
    `SELECT before, after FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.config.update'`,
    [id],
  );
  assert.equal(audit.rows.length, 1);
  assert.deepEqual([audit.rows[0]?.before.revision, audit.rows[0]?.after.revision], [1, 2]);
  assert.equal(audit.rows[0]?.after.config.display_name, 'Renamed Customer');

  // The revision list: newest first, with outcomes.
  const list = await o.admin.mssp.listConfigRevisions({ params: { tenant_id: id }, query: {} });
  assert.equal(list.status, 200);
  if (list.status === 200) {
    assert.deepEqual(
      list.body.items.map((r) => [r.revision, r.outcome]),
      [
        [2, 'pending'],
        [1, 'applied'],
      ],
    );
    assert.equal(list.body.next_cursor, null);
  }

  // While revision 2 rolls out, a further change is refused (decided: not queued).
  await refused(id, { ...body, display_name: 'Again' }, [409, 'revision_pending']);
});

test('issue 15: secrets — a new LLM key rewrites its Secret, a left-out one is kept, removing llm empties it; integration credentials likewise; no value is stored', async () => {
  const { id, config } = await activeTenant({
    integrations: { items: [{ ...SIEM, credential: 'siem-secret-1' }] },
  });
  const names = installSecretNames(id);
  const body = await current(id);
  const newKey = `sk-${randomBytes(12).toString('hex')}`;
  const rotated = await putConfig(o.admin, id, {
    ...body,
    llm: { ...body.llm, api_key: newKey },
    integrations: {
      items: [
        { ...SIEM },
        {
          kind: 'thehive',
          name: 'cases',
          endpoint_url: 'https://cases.example.test',
          credential: 'hive-1',
        },
      ],
    },
  });
  assert.equal(rotated.status, 202, JSON.stringify(rotated.body));
  assert.deepEqual(await o.deps.secrets.read(names.llm), { api_key: newKey });
  assert.deepEqual(await o.deps.secrets.read(names.integrations), {
    'siem.main': 'siem-secret-1',
    'thehive.cases': 'hive-1',
  });
  await settle(id);

  // Removing llm and the siem item: the key and the siem credential are gone from the Secrets.
  const next = await current(id);
  const { llm: _, ...withoutLlm } = next;
  const removed = await putConfig(o.admin, id, {
    ...withoutLlm,
    integrations: { items: next.integrations?.items?.filter((i) => i.kind === 'thehive') },
  });
  assert.equal(removed.status, 202, JSON.stringify(removed.body));
  if (removed.status === 202) {
    assert.equal(removed.body.pending?.config.llm, undefined);
    assert.deepEqual(
      removed.body.pending?.config.integrations?.items?.map((i) => [i.kind, i.has_credential]),
      [['thehive', true]],
    );
  }
  assert.deepEqual(await o.deps.secrets.read(names.llm), {});
  assert.deepEqual(await o.deps.secrets.read(names.integrations), { 'thehive.cases': 'hive-1' });

  // No secret value anywhere in the database: lifecycle, event stream, audit.
  const { rows } = await o.db.pools.mssp.query<{ text: string }>(
    `SELECT string_agg(x, ' ') AS text FROM (
       SELECT details::text AS x FROM tenant_lifecycle_events WHERE tenant_id = $1
       UNION ALL SELECT payload::text FROM events WHERE tenant_id = $1
       UNION ALL SELECT coalesce(before::text, '') || coalesce(after::text, '') || coalesce(details::text, '')
         FROM audit_log WHERE tenant_id = $1) s`,
    [id],
  );
  for (const value of [config.llm?.api_key ?? '?', newKey, 'siem-secret-1', 'hive-1']) {
    assert.ok(!rows[0]?.text.includes(value), `${value.slice(0, 6)}… is stored`);
  }
});

test('issue 15 bad input: 400 bad shape, 422 invalid or immutable, 409 stale or not active, 404 — each with nothing written', async () => {
  const { id, slug } = await activeTenant({
    branding: { app_name: 'Acme SOC', primary_color: '#112233', secondary_color: '#abcdef' },
  });
  const body = await current(id);
  // Shape (the contract): unknown field, wrong types, an empty secret, a bad revision number.
  await refused(id, { ...body, colour: 'red' }, [400, 'validation_failed']);
  await refused(id, { ...body, display_name: '' }, [400, 'validation_failed']);
  await refused(id, { ...body, llm: { ...body.llm, api_key: '' } }, [400, 'validation_failed']);
  await refused(id, { ...body, expected_revision: 0 }, [400, 'validation_failed']);
  await refused(id, { ...body, components: { cases: { requests: { cpu: '1Gi' } } } }, [
    400,
    'validation_failed',
  ]);
  // What the package could not run: the same validator as creation, answered 422.
  await refused(
    id,
    { ...body, components: { cases: { requests: { cpu: '2' }, limits: { cpu: '1' } } } },
    [422, 'config_invalid'],
  );
  await refused(
    id,
    { ...body, components: { cases: { requests: { cpu: '1000' }, limits: { cpu: '1000' } } } },
    [422, 'config_invalid'],
  );
  await refused(id, { ...body, llm: { ...body.llm, base_url: 'https://127.0.0.1/v1' } }, [
    422,
    'config_invalid',
  ]);
  // Fixed at creation, or owned by another route.
  await refused(id, { ...body, slug: `${slug}-x` }, [422, 'immutable_field']);
  await refused(id, { ...body, monitor_ingress: { mode: 'edge-proxy' } }, [422, 'immutable_field']);
  await refused(
    id,
    { ...body, branding: { app_name: 'Other', primary_color: '#000', secondary_color: '#fff' } },
    [422, 'immutable_field'],
  );
  // Sent back unchanged they are fine (a GET → PUT round trip).
  const same = await putConfig(o.admin, id, { ...body, slug });
  assert.equal(same.status, 200);
  // Optimistic concurrency.
  await refused(id, { ...body, display_name: 'Stale', expected_revision: 7 }, [
    409,
    'revision_conflict',
  ]);
  // Unknown tenant.
  const missing = await putConfig(o.admin, '00000000-0000-4000-8000-000000000000', body);
  assert.deepEqual([missing.status, problemCode(missing)], [404, 'tenant_not_found']);

  // Only an active tenant: a pending one and a decommissioning one are refused.
  const pending = await createTenantVia(o, tenantConfig(uniqueSlug('cfgp')));
  await refused(pending, { ...body, slug: undefined, display_name: 'P' }, [409, 'invalid_state']);
  await o.db.pools.mssp.query(`UPDATE tenants SET state = 'decommissioning' WHERE id = $1`, [
    pending,
  ]);
  await refused(pending, { ...body, slug: undefined, display_name: 'P' }, [409, 'invalid_state']);
});

test('issue 15 / §5.8 roles: analysts read but cannot change; an impersonation token cannot change even its own tenant and reads no other', async () => {
  const a = await activeTenant();
  const b = await activeTenant();
  const body = await current(a.id);
  const analyst = await signedInAs(o, 'analyst');
  await refused(a.id, { ...body, display_name: 'By analyst' }, [403, 'forbidden'], analyst);
  const asA = await impersonating(o.api, o.admin, a.id, 'config review');
  await refused(
    a.id,
    { ...body, display_name: 'By token' },
    [403, 'outside_impersonated_tenant'],
    asA,
  );
  assert.equal((await asA.mssp.getConfig({ params: { tenant_id: a.id } })).status, 200);
  for (const res of [
    await asA.mssp.getConfig({ params: { tenant_id: b.id } }),
    await asA.mssp.listConfigRevisions({ params: { tenant_id: b.id }, query: {} }),
  ]) {
    assert.deepEqual([res.status, problemCode(res)], [403, 'outside_impersonated_tenant']);
  }
  const customer = await signedInAs(o, 'customer_viewer', { tenantId: a.id });
  const own = await customer.mssp.getConfig({ params: { tenant_id: a.id } });
  assert.equal(own.status, 403);
});

test('issue 15 revisions list: keyset pages newest first; a cursor svc did not issue is 400 invalid_cursor', async () => {
  const { id } = await activeTenant();
  for (const name of ['Two', 'Three', 'Four']) {
    const res = await putConfig(o.admin, id, { ...(await current(id)), display_name: name });
    assert.equal(res.status, 202);
    await settle(id);
  }
  const seen: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await o.admin.mssp.listConfigRevisions({
      params: { tenant_id: id },
      query: { limit: 3, ...(cursor ? { cursor } : {}) },
    });
    assert.equal(page.status, 200);
    if (page.status !== 200) return;
    seen.push(...page.body.items.map((r) => r.revision));
    assert.ok(page.body.items.every((r) => r.outcome === 'applied'));
    cursor = page.body.next_cursor ?? undefined;
  } while (cursor);
  assert.deepEqual(seen, [4, 3, 2, 1]);
  const applied = await o.admin.mssp.getConfig({ params: { tenant_id: id } });
  if (applied.status === 200) assert.equal(applied.body.config.display_name, 'Four');

  const foreign = Buffer.from(JSON.stringify(['tenants', 3])).toString('base64url');
  for (const bad of [
    foreign,
    'bm90LWpzb24',
    Buffer.from('["config-revisions",0]').toString('base64url'),
  ]) {
    const res = await o.admin.mssp.listConfigRevisions({
      params: { tenant_id: id },
      query: { cursor: bad },
    });
    assert.deepEqual([res.status, problemCode(res)], [400, 'invalid_cursor'], bad);
  }
});

test('issue 15 branding: a branding edit of an active tenant makes a revision so the package values follow; a config PUT keeps the edited branding', async () => {
  const { id } = await activeTenant({
    branding: { app_name: 'Acme SOC', primary_color: '#112233', secondary_color: '#abcdef' },
  });
  const res = await o.admin.mssp.putBranding({
    params: { tenant_id: id },
    body: { app_name: 'Acme Defence', primary_color: '#223344', secondary_color: '#fedcba' },
  });
  assert.equal(res.status, 200);
  const view = await o.admin.mssp.getConfig({ params: { tenant_id: id } });
  assert.equal(view.status, 200);
  if (view.status !== 200) return;
  assert.equal(view.body.pending?.revision, 2);
  assert.deepEqual(view.body.pending?.config.branding, {
    app_name: 'Acme Defence',
    primary_color: '#223344',
    secondary_color: '#fedcba',
  });
  await settle(id);
  // A configuration change carries the branding row along, sent or not.
  const body = await current(id);
  const { branding: _, ...rest } = body;
  const changed = await putConfig(o.admin, id, { ...rest, display_name: 'New name' });
  assert.equal(changed.status, 202);
  if (changed.status === 202)
    assert.equal(changed.body.pending?.config.branding?.app_name, 'Acme Defence');
});

test('issue 15: two changes at once — one revision wins, the other is refused', async () => {
  const { id } = await activeTenant();
  const body = await current(id);
  const results = await Promise.all(
    ['First', 'Second'].map((display_name) => putConfig(o.admin, id, { ...body, display_name })),
  );
  assert.deepEqual(
    results.map((r) => r.status).sort(),
    [202, 409],
    JSON.stringify(results.map((r) => r.body)),
  );
  const loser = results.find((r) => r.status === 409);
  assert.ok(loser && ['revision_pending', 'revision_conflict'].includes(problemCode(loser) ?? ''));
  const { rows } = await o.db.pools.mssp.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM tenant_lifecycle_events WHERE tenant_id = $1 AND kind = 'config_revision'`,
    [id],
  );
  assert.equal(rows[0]?.n, 2);
});

test('issue 15: a tenant with no recorded configuration (written outside svc) is 404 config_not_found, not a server error; nothing is written', async () => {
  const id = await createTenant(o.db.pools.mssp, uniqueSlug('bare'));
  await o.db.pools.mssp.query(
    `UPDATE tenants SET state = 'active', chart_version = '0.1.0' WHERE id = $1`,
    [id],
  );
  const read = await o.admin.mssp.getConfig({ params: { tenant_id: id } });
  assert.deepEqual([read.status, problemCode(read)], [404, 'config_not_found']);
  const slug = (
    await o.db.pools.mssp.query<{ slug: string }>('SELECT slug FROM tenants WHERE id = $1', [id])
  ).rows[0]?.slug;
  await refused(id, { slug, display_name: 'Renamed' }, [404, 'config_not_found']);
});
