import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { readEventsAfter, readEventsToFold } from '../../src/domains/events/event-repository.ts';
import { foldEvents } from '../../src/domains/projections/folds.ts';
import { noCheckpoints } from '../../src/domains/projections/projection-registry.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { openInvestigation, randomTraffic, receiveAlert, seeded, wazuhAlert } from './support.ts';

/**
 * The projector reads alert documents cut to the fields the folds use (readEventsToFold): the
 * fold of those must equal the fold of the whole stored documents, for every projection. If a
 * fold starts reading another alert field, this test fails until the cut includes it.
 */
let db: TestDatabase;
const NONE = noCheckpoints();

before(async () => {
  db = await createTestDatabase();
});
after(() => db.drop());

test('issue 12: the projector’s trimmed read folds exactly like the full stored alerts', async () => {
  const tenant = await createTenant(db.pools.app);
  await randomTraffic(db.app, tenant, 300, seeded(12));
  // Every indicator field at once, and an alert without data or syscheck at all.
  const at = new Date(Date.UTC(2026, 10, 26, 9, 30));
  const full = wazuhAlert({
    ruleId: '550',
    level: 7,
    at,
    srcip: '198.51.100.4',
    url: 'http://bad.example/x',
    sha256: 'cd'.repeat(32),
  });
  (full.data as Record<string, unknown>).dstip = '198.51.100.5';
  const bare = { ...wazuhAlert({ ruleId: '551', level: 3, at }), data: undefined };
  for (const alert of [full, bare]) {
    const investigation = await openInvestigation(db.app, tenant, alert, at);
    await receiveAlert(db.app, tenant, investigation, alert, at);
  }

  const [whole, trimmed] = await db.app.withTenant(tenant, async (tx) => [
    await readEventsAfter(tx, 0n, 1_000),
    await readEventsToFold(tx, 0n, 1_000),
  ]);
  assert.equal(trimmed.length, whole.length);
  assert.ok(whole.length > 300);
  assert.deepEqual(foldEvents(trimmed, NONE), foldEvents(whole, NONE));
  // And it is a cut: the stored documents' other fields do not travel.
  const alertEvent = trimmed.find((e) => e.type === 'alert.received');
  assert.ok(alertEvent);
  const doc = (alertEvent.payload as { alert: Record<string, unknown> }).alert;
  assert.deepEqual(Object.keys(doc).sort(), ['data', 'rule', 'syscheck']);
});
