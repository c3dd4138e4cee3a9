import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { RELEASE_NAME } from '../../src/orchestrator/release.ts';
import { SYSTEM_VERSION } from '../../src/orchestrator/runtime.ts';
import { problemCode } from '../support/api.ts';
import {
  activeTenant,
  lifecycle,
  tenantChartCopy,
  tenantRow,
  useOrchestration,
} from './support.ts';

let chartsDir: string;

/**
 * Tenant package versions beside the bundled 0.1.0: copies of it with another version, one
 * (0.5.0) whose adapter can never be scheduled, so its rollout never completes.
 */
async function chartVersions(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-charts-'));
  for (const version of ['0.1.0', '0.2.0', '0.3.0', '0.4.0', '0.9.0']) {
    await tenantChartCopy(dir, version);
  }
  await tenantChartCopy(dir, '0.5.0', { unschedulableAdapter: true });
  return dir;
}

const o = useOrchestration(
  async () => {
    chartsDir = await chartVersions();
    // The readiness wait bounds the upgrade's rollout wait too: 60 s keeps the failing case short.
    return { chartsDir, installVersion: '0.1.0', timing: { readinessTimeoutMs: 60_000 } };
  },
  async (o) => {
    // §9.2: the matrix for this svc. 0.9.0 is bundled but has no entry: out of range.
    await o.db.pools.admin.query(
      `INSERT INTO chart_compatibility (system_version, tenant_chart_version, status, notes) VALUES
       ($1, '0.2.0', 'supported', NULL), ($1, '0.3.0', 'deprecated', 'ends with 0.3'),
       ($1, '0.4.0', 'blocked', 'data loss bug'), ($1, '0.5.0', 'supported', NULL)`,
      [SYSTEM_VERSION],
    );
  },
);
after(() => rm(chartsDir, { recursive: true, force: true }));

async function upgradeSettled(id: string): Promise<string[]> {
  const deadline = Date.now() + 240_000;
  for (;;) {
    const row = await o.db.pools.mssp.query<{ upgrade_target: string | null }>(
      'SELECT upgrade_target FROM tenants WHERE id = $1',
      [id],
    );
    if (row.rows[0]?.upgrade_target === null) return lifecycle(o, id);
    if (Date.now() > deadline) throw new Error('upgrade never settled');
    await sleep(250);
  }
}

async function auditActions(id: string): Promise<string[]> {
  const { rows } = await o.db.pools.mssp.query<{ action: string }>(
    `SELECT action FROM audit_log WHERE tenant_id = $1 AND action LIKE 'tenant.upgrade%' ORDER BY "timestamp"`,
    [id],
  );
  return rows.map((r) => r.action);
}

test('§9.5.4 matrix through :upgrade — supported proceeds, deprecated warns and proceeds, blocked and out-of-range are refused', {
  timeout: 500_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'up');
  const namespace = `tenant-${slug}`;

  const blocked = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: '0.4.0' },
  });
  assert.deepEqual([blocked.status, problemCode(blocked)], [409, 'upgrade_blocked']);
  const outOfRange = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: '0.9.0' },
  });
  assert.deepEqual([outOfRange.status, problemCode(outOfRange)], [409, 'upgrade_out_of_range']);
  const unknown = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: '7.0.0' },
  });
  assert.deepEqual([unknown.status, problemCode(unknown)], [422, 'chart_version_unknown']);
  const malformed = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: 'latest' },
  });
  assert.deepEqual([malformed.status, problemCode(malformed)], [400, 'validation_failed']);
  // Refusals change nothing but leave an audit trail.
  assert.equal((await tenantRow(o, id))?.chart_version, '0.1.0');
  assert.equal((await o.deps.helm.status({ release: RELEASE_NAME, namespace }))?.revision, 1);
  assert.deepEqual(await auditActions(id), ['tenant.upgrade.refuse', 'tenant.upgrade.refuse']);

  const supported = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: '0.2.0' },
  });
  assert.equal(supported.status, 202);
  if (supported.status === 202) {
    assert.deepEqual([supported.body.compatibility, supported.body.warnings], ['supported', []]);
    assert.equal(supported.body.tenant.upgrade_target, '0.2.0');
  }
  // Asked again at once, while helm is still at work on the first.
  const busy = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: '0.3.0' },
  });
  assert.deepEqual([busy.status, problemCode(busy)], [409, 'upgrade_in_progress']);
  let steps = await upgradeSettled(id);
  assert.equal(steps.at(-1), 'step:upgraded');
  let release = await o.deps.helm.status({ release: RELEASE_NAME, namespace });
  assert.deepEqual(
    [release?.chartVersion, (await tenantRow(o, id))?.chart_version],
    ['0.2.0', '0.2.0'],
  );

  const deprecated = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: '0.3.0' },
  });
  assert.equal(deprecated.status, 202);
  if (deprecated.status === 202) {
    assert.equal(deprecated.body.compatibility, 'deprecated');
    assert.match(deprecated.body.warnings[0] ?? '', /deprecated/);
  }
  steps = await upgradeSettled(id);
  assert.equal(steps.at(-1), 'step:upgraded');
  release = await o.deps.helm.status({ release: RELEASE_NAME, namespace });
  assert.equal(release?.chartVersion, '0.3.0');
  assert.equal((await tenantRow(o, id))?.chart_version, '0.3.0');
  assert.equal((await tenantRow(o, id))?.state, 'active', 'an upgrade does not change the state');
  const { rows } = await o.db.pools.mssp.query<{ details: { warnings: string[] } }>(
    `SELECT details FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.upgrade'
      AND details->>'compatibility' = 'deprecated'`,
    [id],
  );
  assert.match(rows[0]?.details.warnings[0] ?? '', /deprecated/, 'the warning is audited');
});

test('§9.4 an upgrade whose rollout never completes is rolled back to the revision that ran before', {
  timeout: 500_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'up');
  const namespace = `tenant-${slug}`;
  const res = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: '0.5.0' },
  });
  assert.equal(res.status, 202);
  const steps = await upgradeSettled(id);
  assert.equal(steps.at(-1), 'step:upgrade_failed');
  const release = await o.deps.helm.status({ release: RELEASE_NAME, namespace });
  assert.equal(release?.chartVersion, '0.1.0', 'rolled back');
  assert.equal(release?.revision, 3, 'install, failed upgrade, rollback');
  const row = await tenantRow(o, id);
  assert.deepEqual([row?.state, row?.chart_version], ['active', '0.1.0']);
  assert.deepEqual(await auditActions(id), ['tenant.upgrade', 'tenant.upgrade.fail']);
});

test('§3.1 upgrade rules: an upgrade to the version the tenant runs is refused already_at_version, and of two upgrades fired at once exactly one is accepted', {
  timeout: 500_000,
}, async () => {
  const { id } = await activeTenant(o, 'race');
  const upgradeTo = (version: string) =>
    o.admin.mssp.upgrade({ params: { tenant_id: id }, body: { tenant_chart_version: version } });

  const noop = await upgradeTo('0.1.0');
  assert.deepEqual([noop.status, problemCode(noop)], [409, 'already_at_version']);
  const target = await o.db.pools.mssp.query<{ upgrade_target: string | null }>(
    'SELECT upgrade_target FROM tenants WHERE id = $1',
    [id],
  );
  assert.equal(target.rows[0]?.upgrade_target, null, 'nothing recorded');
  assert.deepEqual(await auditActions(id), [], 'nothing audited');

  const both = await Promise.all([upgradeTo('0.2.0'), upgradeTo('0.2.0')]);
  assert.deepEqual(
    both.map((r) => r.status).sort(),
    [202, 409],
    JSON.stringify(both.map((r) => r.body)),
  );
  const loser = both.find((r) => r.status === 409);
  assert.ok(
    ['upgrade_in_progress', 'tenant_busy', 'already_at_version'].includes(
      problemCode(loser ?? { body: undefined }) ?? '',
    ),
    JSON.stringify(loser?.body),
  );
  const steps = await upgradeSettled(id);
  assert.equal(steps.filter((s) => s === 'step:upgrade_requested').length, 1, 'one request kept');
  assert.equal(steps.at(-1), 'step:upgraded');
  assert.deepEqual(await auditActions(id), ['tenant.upgrade', 'tenant.upgrade.complete']);

  // The version it now runs: refused as well, whoever asks.
  const again = await upgradeTo('0.2.0');
  assert.deepEqual([again.status, problemCode(again)], [409, 'already_at_version']);
  assert.equal((await tenantRow(o, id))?.chart_version, '0.2.0');
});
