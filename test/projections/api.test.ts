import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { createProjectionService } from '../../src/domains/projections/projection-service.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { analyzerCompleted, openInvestigation, receiveAlert, wazuhAlert } from './support.ts';

let db: TestDatabase;
let api: TestApi;
let system: SystemGate;
let a: string;
let b: string;
let invA: string;
const HOUR = 3_600_000;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  system = createSystemGate(db.target);
  a = await createTenant(db.pools.app, 'proj-alpha');
  b = await createTenant(db.pools.app, 'proj-bravo');
  await db.pools.mssp.query(`UPDATE tenants SET state = 'active' WHERE id = ANY($1)`, [[a, b]]);
  // Alerts of the last hours by the API's clock, so the report's window and the 24 h count see them.
  const now = api.clock.now().getTime();
  const at = (hoursAgo: number) =>
    new Date(Math.floor(now / HOUR) * HOUR - hoursAgo * HOUR + 60_000);
  const first = wazuhAlert({ ruleId: '5712', level: 10, at: at(3), srcip: '203.0.113.7' });
  invA = await openInvestigation(db.app, a, first, at(3));
  await receiveAlert(db.app, a, invA, first, at(3));
  const second = wazuhAlert({ ruleId: '5712', level: 13, at: at(2), srcip: '203.0.113.7' });
  await receiveAlert(db.app, a, invA, second, at(2));
  const other = wazuhAlert({ ruleId: '31101', level: 5, agentId: '002', at: at(1) });
  const invA2 = await openInvestigation(db.app, a, other, at(1));
  await receiveAlert(db.app, a, invA2, other, at(1));
  await analyzerCompleted(db.app, a, {
    analyzer: 'abuseipdb',
    durationMs: 40,
    success: true,
    at: at(1),
  });
  const bAlert = wazuhAlert({ ruleId: '550', level: 7, at: at(1), srcip: '192.0.2.44' });
  const invB = await openInvestigation(db.app, b, bAlert, at(1));
  await receiveAlert(db.app, b, invB, bAlert, at(1));
  const projections = createProjectionService({ db: db.app, system });
  for (const t of [a, b]) assert.equal((await projections.foldNext(t)).kind, 'folded');
});
after(async () => {
  await system.close();
  await api.close();
  await db.drop();
});

test('§4.3 overview shows the projected investigations: open count by severity, events of the last 24 h', async () => {
  const svc = await signedInAs({ db, api }, 'customer_viewer', { tenantId: a });
  const res = await svc.tenant.overview();
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(res.body.open_investigations, {
    total: 2,
    by_severity: { info: 0, low: 1, medium: 0, high: 0, critical: 1 },
    by_status: { open: 2, triaging: 0, awaiting_review: 0 },
  });
  assert.equal(res.body.events_last_24h, 6, 'two openings, three alerts, one analyzer run');
});

test('§4.3 incidents list the projected investigations: title, raised severity, source reference', async () => {
  const svc = await signedInAs({ db, api }, 'customer_viewer', { tenantId: a });
  const res = await svc.tenant.incidents();
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  const first = res.body.items.find((i) => i.id === invA);
  assert.ok(first);
  assert.deepEqual(
    [first.title, first.severity, first.status, first.source, first.source_ref],
    ['rule 5712', 'critical', 'open', 'wazuh', 'rule:5712/agent:001'],
  );
  assert.equal(res.body.items.length, 2, 'only A’s incidents');
});

test('§4.3 reports show the projected hourly metrics, rule and IOC stats of the caller’s tenant only', async () => {
  const svc = await signedInAs({ db, api }, 'customer_viewer', { tenantId: a });
  const res = await svc.tenant.reports();
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.equal(res.body.totals['alerts.received'], 3);
  assert.equal(res.body.totals['investigations.opened'], 2);
  assert.equal(res.body.totals['alerts.critical'], 1);
  assert.deepEqual(
    res.body.top_rules.map((r) => [r.rule_id, r.fired]),
    [
      ['5712', 2],
      ['31101', 1],
    ],
  );
  assert.deepEqual(
    res.body.top_iocs.map((i) => [i.ioc_type, i.ioc_value, i.hits]),
    [['ip', '203.0.113.7', 2]],
  );
});

test('§4.2 the fleet summary shows each tenant’s projected open incidents', async () => {
  const staff = await signedInAs({ db, api }, 'analyst');
  const res = await staff.mssp.fleetSummary();
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  const open = Object.fromEntries(res.body.tenants.map((t) => [t.slug, t.open_incidents]));
  assert.deepEqual(open, { 'proj-alpha': 2, 'proj-bravo': 1 });
});
