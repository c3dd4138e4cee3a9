import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { adapterDetails } from '../../src/cli/tenants/output.ts';
import { checkpoint, postAlerts, wazuhAlert } from '../internal/ingest-support.ts';
import { adapterToken, bearer, setState } from '../internal/support.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs } from '../support/sign-in.ts';

/**
 * Issue 12 "how to watch them": the MSSP tenant detail (and `svc tenants get`) shows the
 * tenant's adapter as its last heartbeat left it and what it has delivered; never another
 * tenant's.
 */
let db: TestDatabase;
let api: TestApi;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
});
after(async () => {
  await api.close();
  await db.drop();
});

async function heartbeat(token: string, status: Record<string, unknown>) {
  const res = await fetch(`${api.url}/api/internal/adapter/health`, {
    method: 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: JSON.stringify({ version: '0.1.0', status }),
  });
  assert.equal(res.status, 200);
}

test('issue 12: the tenant detail shows its adapter’s last heartbeat and delivered alerts, and nothing of another tenant’s', async () => {
  const heard = await createTenant(db.pools.app);
  const silent = await createTenant(db.pools.app);
  for (const t of [heard, silent]) await setState(db, t, 'active');
  const token = await adapterToken(api, heard);
  await heartbeat(token, { ingest: 'running', indexer: 'reachable', lag_seconds: 0 });
  const posted = await postAlerts(api, token, {
    alerts: [wazuhAlert(), wazuhAlert()],
    checkpoint: checkpoint(2),
  });
  assert.equal(posted.status, 200);

  const analyst = await signedInAs({ db, api }, 'analyst');
  const detail = await analyst.mssp.getTenant({ params: { tenant_id: heard } });
  assert.equal(detail.status, 200);
  if (detail.status !== 200) return;
  const adapter = detail.body.adapter;
  assert.ok(adapter, 'the heard tenant has adapter activity');
  assert.equal(adapter.version, '0.1.0');
  assert.deepEqual(adapter.status, { ingest: 'running', indexer: 'reachable', lag_seconds: 0 });
  assert.equal(adapter.alerts_total, 2);
  assert.ok(adapter.checkpoint_at !== null);
  assert.ok(Date.parse(adapter.last_seen_at) >= Date.parse(adapter.first_seen_at));

  // The silent tenant's detail says so, and shows none of the heard tenant's numbers.
  const other = await analyst.mssp.getTenant({ params: { tenant_id: silent } });
  assert.equal(other.status, 200);
  if (other.status === 200) assert.equal(other.body.adapter, null);

  // What `svc tenants get` prints from it.
  const rows = adapterDetails(adapter);
  assert.deepEqual(rows[0], ['adapter', `0.1.0, last heard ${adapter.last_seen_at}`]);
  assert.deepEqual(rows[1], ['ingest', 'running, indexer reachable, lag 0 s']);
  assert.match(rows[2]?.[1] ?? '', /^2 delivered, last batch /);
  assert.deepEqual(adapterDetails(null), [['adapter', 'not heard from yet']]);
});

test('issue 12: an impersonation of one tenant cannot read another tenant’s adapter activity', async () => {
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  for (const t of [a, b]) await setState(db, t, 'active');
  await heartbeat(await adapterToken(api, b), { ingest: 'running' });
  const analyst = await signedInAs({ db, api }, 'analyst');
  const minted = await analyst.mssp.impersonate({
    params: { tenant_id: a },
    body: { reason: 'checking tenant A adapter activity' },
  });
  assert.equal(minted.status, 200);
  if (minted.status !== 200) return;
  const res = await fetch(`${api.url}/api/mssp/tenants/${b}`, {
    headers: bearer(minted.body.token),
  });
  assert.equal(res.status, 403);
  assert.doesNotMatch(await res.text(), /running|alerts_total/);
});
