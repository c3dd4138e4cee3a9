import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TenantConfigUpdate } from '../../contracts/tenant-config-revisions.ts';
import { findTenant } from '../../src/domains/tenants/tenant-repository.ts';
import { RELEASE_NAME, renderFor } from '../../src/orchestrator/release.ts';
import { denyDeployments } from './inject.ts';
import {
  createTenantVia,
  lifecycle,
  type Orchestration,
  tenantConfig,
  uniqueSlug,
  useOrchestration,
  waitForState,
} from './support.ts';

// The readiness wait bounds a configuration rollout's wait too (as for :upgrade).
const o = useOrchestration({ timing: { readinessTimeoutMs: 90_000 } });

/** client-node returns model class instances; compare their data. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null));

/** Created with the dashboard off, so a revision turning it on must create a Deployment. */
async function activeTenant(o: Orchestration) {
  const slug = uniqueSlug('cfg');
  const id = await createTenantVia(
    o,
    tenantConfig(slug, { components: { monitor_dashboard_enabled: false } }),
  );
  await waitForState(o, id, 'provisioning');
  await o.runAdapter(slug);
  await waitForState(o, id, 'active');
  return { id, slug, namespace: `tenant-${slug}` };
}

async function settled(id: string): Promise<{ config_revision: number }> {
  const deadline = Date.now() + 240_000;
  for (;;) {
    const { rows } = await o.db.pools.mssp.query<{
      config_revision: number;
      config_target: number | null;
    }>('SELECT config_revision, config_target FROM tenants WHERE id = $1', [id]);
    const row = rows[0];
    if (row && row.config_target === null) return row;
    if (Date.now() > deadline) throw new Error('the configuration rollout never settled');
    await sleep(250);
  }
}

async function body(id: string): Promise<TenantConfigUpdate> {
  const res = await o.admin.mssp.getConfig({ params: { tenant_id: id } });
  assert.equal(res.status, 200);
  if (res.status !== 200) throw new Error('unreachable');
  const { llm, integrations, ...rest } = res.body.config;
  const update: TenantConfigUpdate = rest;
  if (llm) {
    const { has_api_key: _, ...settings } = llm;
    update.llm = settings;
  }
  if (integrations)
    update.integrations = {
      ...integrations,
      items: (integrations.items ?? []).map(({ has_credential: _, ...item }) => item),
    };
  return update;
}

/** What svc renders now from the applied revision (release.ts renderFor, the default). */
async function appliedValues(id: string) {
  const tenant = await o.db.app.withoutTenant((tx) => findTenant(tx, id));
  assert.ok(tenant?.chart_version);
  return (await renderFor(o.deps, tenant, tenant.chart_version)).values;
}

test('§9.5.2 round trip for changes: sizes, analyzers and monitor ingress change → the release values equal the newly rendered ones and the resources follow; a failing revision rolls back to the previous values', {
  timeout: 600_000,
}, async () => {
  const { id, slug, namespace } = await activeTenant(o);
  const first = await o.deps.helm.values({ release: RELEASE_NAME, namespace });

  // Revision 2: sizes, analyzers, monitor ingress hostname.
  const res = await o.admin.mssp.putConfig({
    params: { tenant_id: id },
    body: {
      ...(await body(id)),
      components: {
        monitor_dashboard_enabled: false,
        cases: {
          requests: { cpu: '250m', memory: '768Mi' },
          limits: { cpu: '900m', memory: '1536Mi' },
        },
        analyzers: ['VirusTotal_3_1', 'Abuse_Finder_3_0'],
      },
      monitor_ingress: { mode: 'loadbalancer', hostname: 'events.cfg.example.test' },
      integrations: {
        items: [
          {
            kind: 'siem',
            name: 'main',
            endpoint_url: 'https://siem.example.test',
            credential: 's1',
          },
        ],
      },
      expected_revision: 1,
    },
  });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal((await settled(id)).config_revision, 2);
  assert.equal((await lifecycle(o, id)).at(-1), 'step:config_applied');
  // svc's own rows follow the applied revision: the adapter's integration list.
  const integrations = await o.db.pools.mssp.query<{ kind: string; secret_name: string }>(
    `SELECT i.kind, s.name AS secret_name FROM integration_configs i
       JOIN tenant_secrets s ON s.tenant_id = i.tenant_id AND s.id = i.secret_id
      WHERE i.tenant_id = $1`,
    [id],
  );
  assert.deepEqual(integrations.rows, [{ kind: 'siem', secret_name: `tenant-${id}-integrations` }]);

  const values = await appliedValues(id);
  assert.notDeepEqual(values, first);
  assert.deepEqual(await o.deps.helm.values({ release: RELEASE_NAME, namespace }), values);
  assert.deepEqual(values.components.analysis.analyzers, ['VirusTotal_3_1', 'Abuse_Finder_3_0']);
  assert.equal(values.monitorIngress.hostname, 'events.cfg.example.test');
  const cases = await o.apps.readNamespacedDeployment({ name: 'cases', namespace });
  assert.deepEqual(plain(cases.spec?.template.spec?.containers[0]?.resources), {
    requests: { cpu: '250m', memory: '768Mi' },
    limits: { cpu: '900m', memory: '1536Mi' },
  });
  const monitor = await o.core.readNamespacedService({ name: 'monitor', namespace });
  assert.equal(monitor.metadata?.annotations?.['svc/monitor-hostname'], 'events.cfg.example.test');
  const apply = await o.db.pools.mssp.query<{ actor_id: string }>(
    `SELECT actor_id FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.config.apply'`,
    [id],
  );
  assert.deepEqual(
    apply.rows.map((r) => r.actor_id),
    ['system:orchestrator'],
  );
  const applied = await o.deps.helm.status({ release: RELEASE_NAME, namespace });

  // Revision 3 turns the dashboard on; the API server refuses its Deployment: helm fails, the
  // release goes back to the revision before, and the tenant keeps rendering from revision 2.
  const denial = await denyDeployments(o, slug);
  try {
    const failing = await o.admin.mssp.putConfig({
      params: { tenant_id: id },
      body: {
        ...(await body(id)),
        components: { ...(await body(id)).components, monitor_dashboard_enabled: true },
        expected_revision: 2,
      },
    });
    assert.equal(failing.status, 202, JSON.stringify(failing.body));
    assert.equal((await settled(id)).config_revision, 2, 'the applied revision stays');
  } finally {
    await denial.lift();
  }
  assert.equal((await lifecycle(o, id)).at(-1), 'step:config_failed');
  const release = await o.deps.helm.status({ release: RELEASE_NAME, namespace });
  assert.equal(release?.revision, (applied?.revision ?? 0) + 2, 'failed upgrade, then rollback');
  assert.equal(release?.status, 'deployed');
  assert.deepEqual(
    await o.deps.helm.values({ release: RELEASE_NAME, namespace }),
    values,
    "the release's values are revision 2's again",
  );
  assert.deepEqual(await appliedValues(id), values, 'rendering ignores the failed revision 3');
  const dashboards = await o.apps.listNamespacedDeployment({ namespace });
  assert.ok(!dashboards.items.some((d) => d.metadata?.name === 'monitor-dashboard'));

  const list = await o.admin.mssp.listConfigRevisions({ params: { tenant_id: id }, query: {} });
  assert.equal(list.status, 200);
  if (list.status === 200) {
    assert.deepEqual(
      list.body.items.map((r) => [r.revision, r.outcome]),
      [
        [3, 'rolled_back'],
        [2, 'applied'],
        [1, 'applied'],
      ],
    );
    assert.match(list.body.items[0]?.error ?? '', /injected failure/);
  }
  const fail = await o.db.pools.mssp.query<{ details: { rolled_back_to_revision: number } }>(
    `SELECT details FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.config.fail'`,
    [id],
  );
  assert.equal(fail.rows[0]?.details.rolled_back_to_revision, applied?.revision);
  const row = await o.db.pools.mssp.query<{ state: string }>(
    'SELECT state FROM tenants WHERE id = $1',
    [id],
  );
  assert.equal(row.rows[0]?.state, 'active', 'a configuration change never changes the state');
});
