import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { createProjectionService } from '../../src/domains/projections/projection-service.ts';
import { createLogger } from '../../src/log/index.ts';
import { createProjector, type Projector } from '../../src/projector/projector.ts';
import { bearer, setState } from '../internal/support.ts';
import { type AdapterProcess, startAdapter } from '../support/adapter-process.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { signedInAs, TEST_HASH_PARAMS, TEST_PASSWORD } from '../support/sign-in.ts';
import { type WazuhAlert, wazuhAlert } from '../support/wazuh-alerts.ts';
import {
  type AdapterTenant,
  type AlertIndices,
  adapterTenant,
  alertIndices,
  eventually,
  storedSourceIds,
} from './support.ts';

/**
 * Issue 12 end to end, from the attacker's side: two tenants, each with its own indexer and its
 * own real `svc adapter` process, the real API and a running projector. Whatever A's alerts
 * become (events, incidents, metrics, rule and IOC stats, stream events), B's users never see
 * them, and A's adapter credential cannot write anything into B.
 */

let db: TestDatabase;
let api: TestApi;
let system: SystemGate;
let projector: Projector;
/** Each tenant's own indices on the real engine (the run's shared OpenSearch node). */
const indexers: { indices: AlertIndices; index: string }[] = [];
const adapters: AdapterProcess[] = [];
let a: AdapterTenant;
let b: AdapterTenant;
let viewerA: SvcClient;
let viewerB: SvcClient;
let streamB: EventStream;
/** B's events before its stream opened (its lifecycle so far): the stream carries those after. */
let priorB: Set<string>;

// Whole minutes a few hours back on the API's clock: inside the report window and the last 24 h.
const BASE = Math.floor((Date.now() - 3 * 3_600_000) / 60_000) * 60_000;
const MINUTE = 60_000;
// wazuhAlert kinds: 0 sshd 5712 (high, srcip 203.0.113.n), 1 PAM 5503 (low, 198.51.100.n),
// 2 syscheck 550 (medium, a sha256), 3 SQL injection 31103 (critical, 192.0.2.n and a url).
// Agents: 0 is '001', 1 is '002', 2 is '003'. Manager names of different lengths keep the two
// tenants' source ids apart.
const SSHD = 0;
const PAM = 1;
const SYSCHECK = 2;
const SQLI = 3;

function alertsOf(
  manager: string,
  from: number,
  kind: number,
  agent: number,
  minutes: number[],
): WazuhAlert[] {
  return minutes.map((m, i) =>
    wazuhAlert(from + i, { start: new Date(BASE + m * MINUTE), stepMs: 0, manager, kind, agent }),
  );
}

const ALPHA = 'alpha-wazuh';
const BRAVO = 'bravo-wazuh-manager';
// 5712 on 001: 34 is exactly 30 minutes after 4 and joins; 65 is 31 minutes after 34 and opens
// a second incident. The same rule on another agent, and another rule, open their own.
const alertsA = [
  ...alertsOf(ALPHA, 0, SSHD, 0, [0, 1, 2, 3, 4, 34]),
  ...alertsOf(ALPHA, 10, SSHD, 0, [65, 66]),
  ...alertsOf(ALPHA, 20, SSHD, 1, [5]),
  ...alertsOf(ALPHA, 30, SQLI, 1, [10, 20]),
];
const alertsB = [
  ...alertsOf(BRAVO, 0, PAM, 2, [0, 1, 2]),
  ...alertsOf(BRAVO, 10, SYSCHECK, 2, [7]),
];

const at = (minute: number) => new Date(BASE + minute * MINUTE).toISOString();

/** What the projector must show, oldest opened first: [source_ref, alert_count, last_alert_at]. */
const INCIDENTS_A = [
  ['rule:5712/agent:001', 6, at(34)],
  ['rule:5712/agent:002', 1, at(5)],
  ['rule:31103/agent:002', 2, at(20)],
  ['rule:5712/agent:001', 2, at(66)],
];
const INCIDENTS_B = [
  ['rule:5503/agent:003', 3, at(2)],
  ['rule:550/agent:003', 1, at(7)],
];

interface StreamEvent {
  id: string;
  data: { type: string; stream_id: string; payload: Record<string, unknown> };
}
interface EventStream {
  status: number;
  next(): Promise<StreamEvent>;
  close(): void;
}

/** A browser's EventSource on a real socket: yields event blocks, skips comment lines. */
async function subscribe(headers: Record<string, string>): Promise<EventStream> {
  const abort = new AbortController();
  const res = await fetch(`${api.url}/api/tenant/events`, { headers, signal: abort.signal });
  const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  async function read(): Promise<StreamEvent> {
    for (;;) {
      const end = buffered.indexOf('\n\n');
      if (end !== -1) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = /^data: (.*)$/m.exec(block)?.[1];
        const id = /^id: (.*)$/m.exec(block)?.[1];
        if (data !== undefined && id !== undefined) return { id, data: JSON.parse(data) };
        continue;
      }
      const chunk = await reader?.read();
      if (!chunk || chunk.done) throw new Error('the stream ended');
      buffered += chunk.value;
    }
  }
  return {
    status: res.status,
    async next() {
      // Fails rather than hangs when an expected event never comes.
      const bound = setTimeout(() => abort.abort(), 30_000);
      try {
        return await read();
      } finally {
        clearTimeout(bound);
      }
    },
    close: () => abort.abort(),
  };
}

async function startFor(tenant: AdapterTenant, alerts: WazuhAlert[]): Promise<void> {
  const indices = await alertIndices();
  const index = await indices.create('alerts', { shards: 3 });
  indexers.push({ indices, index });
  await indices.write(index, alerts, { refresh: 'wait_for' });
  adapters.push(await startAdapter(tenant.env(api.url, indices, indices.env())));
}

async function append(n: number, alerts: WazuhAlert[]): Promise<void> {
  const own = indexers[n];
  if (own) await own.indices.write(own.index, alerts, { refresh: 'wait_for' });
}

async function allStored(tenantId: string, alerts: WazuhAlert[]): Promise<void> {
  await eventually(
    () => storedSourceIds(db, tenantId),
    (ids) => alerts.every((x) => ids.has(x.id)),
  );
}

type Incident = { source_ref: string | null; alert_count: number; last_alert_at: string | null };

async function incidentsOf(viewer: SvcClient) {
  const res = await viewer.tenant.incidents({ query: { limit: 200 } });
  assert.equal(res.status, 200);
  return res.status === 200 ? res.body.items : [];
}

/** [source_ref, alert_count, last_alert_at], oldest incident first. */
function shape(items: Incident[]): unknown[] {
  return items.map((i) => [i.source_ref, i.alert_count, i.last_alert_at]).reverse();
}

/** Waits until the projector has folded `expected` incidents with all their alerts. */
async function projected(viewer: SvcClient, expected: unknown[][]): Promise<void> {
  const alerts = expected.reduce((n, row) => n + Number(row[1]), 0);
  await eventually(
    () => incidentsOf(viewer),
    (items) =>
      items.length === expected.length && items.reduce((n, i) => n + i.alert_count, 0) === alerts,
  );
}

/** Ground truth through the BYPASSRLS role. */
async function eventIdsOf(tenantId: string): Promise<string[]> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id::text AS id FROM events WHERE tenant_id = $1 ORDER BY id',
    [tenantId],
  );
  return rows.map((r) => r.id);
}

async function investigationIdsOf(tenantId: string): Promise<string[]> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM investigations WHERE tenant_id = $1 ORDER BY id',
    [tenantId],
  );
  return rows.map((r) => r.id);
}

/** Every ingest-written row of both tenants, counted as svc_mssp, plus the stored checkpoints. */
async function ingestRows(): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = {};
  for (const table of ['events', 'investigations', 'alert_groups', 'ingest_checkpoints']) {
    const { rows } = await db.pools.mssp.query<{ tenant_id: string; n: number }>(
      `SELECT tenant_id, count(*)::int AS n FROM ${table}
        WHERE tenant_id = ANY($1) GROUP BY tenant_id ORDER BY tenant_id`,
      [[a.tenantId, b.tenantId]],
    );
    result[table] = rows;
  }
  const { rows } = await db.pools.mssp.query(
    'SELECT tenant_id, position, alerts_total FROM ingest_checkpoints WHERE tenant_id = ANY($1) ORDER BY tenant_id',
    [[a.tenantId, b.tenantId]],
  );
  result.checkpoints = rows;
  return result;
}

async function sessionCookie(email: string): Promise<string> {
  const browser = client(api);
  assert.equal((await browser.login(email, TEST_PASSWORD)).status, 200);
  return browser.cookie() ?? '';
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  system = createSystemGate(db.target);
  // The projector as `svc serve` runs it, on the API's own event hub.
  projector = createProjector({
    projections: createProjectionService({ db: db.app, system }),
    events: api.events,
    logger: createLogger('silent'),
    sweepMs: 1_000,
    concurrency: 2,
  });
  await projector.start();
  a = await adapterTenant(db, 'iso-alpha');
  b = await adapterTenant(db, 'iso-bravo');
  for (const t of [a, b]) await setState(db, t.tenantId, 'provisioning');
  viewerA = await signedInAs({ db, api }, 'customer_viewer', { tenantId: a.tenantId });
  viewerB = await signedInAs({ db, api }, 'customer_viewer', { tenantId: b.tenantId });

  // B subscribes before any alert flows; A's alerts are stored before B's adapter even starts,
  // so a leaked A event would reach B's stream ahead of B's own.
  const email = 'viewer-b-stream@example.test';
  await seedUser(db, api.hasher, {
    email,
    role: 'customer_viewer',
    tenantId: b.tenantId,
    password: TEST_PASSWORD,
  });
  priorB = new Set(await eventIdsOf(b.tenantId));
  streamB = await subscribe({ cookie: await sessionCookie(email) });
  assert.equal(streamB.status, 200);
  await eventually(
    async () => api.events.status().subscribers,
    (n) => n === 1,
  );

  await startFor(a, alertsA);
  await allStored(a.tenantId, alertsA);
  await startFor(b, alertsB);
  await allStored(b.tenantId, alertsB);
  await projected(viewerA, INCIDENTS_A);
  await projected(viewerB, INCIDENTS_B);
});

after(async () => {
  streamB?.close();
  for (const adapter of adapters) await adapter.stop();
  await projector?.stop();
  await system?.close();
  await api?.close();
  for (const t of [a, b]) await t?.mounts.remove();
  await db?.drop();
});

test('§4.4 grouping: the same rule on the same agent within 30 minutes is one incident carrying its alert count', async () => {
  assert.deepEqual(shape(await incidentsOf(viewerA)), INCIDENTS_A);
  assert.deepEqual(shape(await incidentsOf(viewerB)), INCIDENTS_B);
  const items = await incidentsOf(viewerA);
  const grouped = items.find((i) => i.alert_count === 6);
  assert.deepEqual(
    [grouped?.title, grouped?.severity, grouped?.source],
    ['sshd: brute force trying to get access to the system. Non existent user.', 'high', 'wazuh'],
  );
});

test("§9.5.5 a customer_viewer of B sees none of A's alerts: incidents, overview and reports hold B's alone", async () => {
  const idsA = await investigationIdsOf(a.tenantId);
  const idsB = await investigationIdsOf(b.tenantId);
  assert.equal(idsA.length, INCIDENTS_A.length);
  const incidents = await incidentsOf(viewerB);
  assert.deepEqual(incidents.map((i) => i.id).sort(), idsB);
  const sourceIdsA = alertsA.map((x) => x.id);
  const leaked = (body: unknown) =>
    [...idsA, ...sourceIdsA, ALPHA].filter((s) => JSON.stringify(body).includes(s));

  const overview = await viewerB.tenant.overview();
  assert.equal(overview.status, 200);
  if (overview.status !== 200) return;
  assert.equal(overview.body.tenant.id, b.tenantId);
  assert.deepEqual(overview.body.open_investigations.by_severity, {
    info: 0,
    low: 1,
    medium: 1,
    high: 0,
    critical: 0,
  });
  assert.equal(overview.body.events_last_24h, (await eventIdsOf(b.tenantId)).length);

  const reports = await viewerB.tenant.reports();
  assert.equal(reports.status, 200);
  if (reports.status !== 200) return;
  assert.deepEqual(
    reports.body.top_rules.map((r) => [r.rule_id, r.fired]),
    [
      ['5503', 3],
      ['550', 1],
    ],
    "A's rules 5712 and 31103 are absent",
  );
  const iocsB = reports.body.top_iocs.map((i) => i.ioc_value);
  assert.ok(iocsB.length > 0);
  assert.deepEqual(
    iocsB.filter((v) => /^(203\.0\.113|192\.0\.2)\./.test(v) || v.includes('item.php')),
    [],
    "A's source addresses and URLs are absent",
  );
  assert.equal(reports.body.totals['alerts.received'], alertsB.length);
  for (const [name, body] of Object.entries({ incidents, overview, reports })) {
    assert.deepEqual(leaked(body), [], `${name} names nothing of A`);
  }

  // The same reads as A show A's, so B's view is not empty for some other reason.
  const reportsA = await viewerA.tenant.reports();
  assert.ok(reportsA.status === 200);
  assert.deepEqual(
    reportsA.body.top_rules.map((r) => [r.rule_id, r.fired]),
    [
      ['5712', 9],
      ['31103', 2],
    ],
  );
});

test("§6.2 §9.5.5 B's event stream carries B's alert events and not one of A's", async () => {
  // B's alert events, its investigations' openings and its activation by the first heartbeat.
  const ofB = (await eventIdsOf(b.tenantId)).filter((id) => !priorB.has(id));
  assert.ok(ofB.length >= alertsB.length + INCIDENTS_B.length);
  const received: StreamEvent[] = [];
  while (received.length < ofB.length) received.push(await streamB.next());
  assert.deepEqual(
    received.map((e) => e.id),
    ofB,
    "exactly B's events, in order; A's, stored first, never came",
  );
  assert.deepEqual(
    received.filter((e) => e.data.type === 'alert.received').map((e) => e.data.payload.source_id),
    alertsB.map((x) => x.id),
  );

  // A second round: A's adapter delivers a later alert first, then B's; the next thing on B's
  // stream is B's own.
  const laterA = alertsOf(ALPHA, 40, SQLI, 1, [80]);
  await append(0, laterA);
  await allStored(a.tenantId, laterA);
  const laterB = alertsOf(BRAVO, 40, SYSCHECK, 2, [9]);
  await append(1, laterB);
  const next = await streamB.next();
  assert.deepEqual(
    [next.data.type, next.data.payload.source_id],
    ['alert.received', laterB[0]?.id],
  );
  const idsA = new Set(await eventIdsOf(a.tenantId));
  assert.ok(!idsA.has(next.id));
});

test('§9.5.5 an MSSP analyst sees both tenants’ incidents, each under its own tenant only', async () => {
  // After the second round: A has a fifth incident (31103 at 80, 60 minutes after 20), B's
  // syscheck incident took its second alert (550 at 9, 2 minutes after 7).
  await projected(viewerB, [INCIDENTS_B[0] as unknown[], ['rule:550/agent:003', 2, at(9)]]);
  await projected(viewerA, [...INCIDENTS_A, ['rule:31103/agent:002', 1, at(80)]]);
  const analyst = await signedInAs({ db, api }, 'analyst');
  for (const [tenant, other] of [
    [a.tenantId, b.tenantId],
    [b.tenantId, a.tenantId],
  ] as const) {
    const res = await analyst.mssp.tenantIncidents({
      params: { tenant_id: tenant },
      query: { limit: 200 },
    });
    assert.equal(res.status, 200);
    if (res.status !== 200) return;
    assert.deepEqual(
      res.body.items.map((i) => i.id).sort(),
      await investigationIdsOf(tenant),
      'every incident of the tenant, under its own path',
    );
    const foreign = new Set(await investigationIdsOf(other));
    assert.ok(res.body.items.every((i) => !foreign.has(i.id)));
  }
  const ofA = await analyst.mssp.tenantIncidents({
    params: { tenant_id: a.tenantId },
    query: { limit: 200 },
  });
  assert.ok(ofA.status === 200);
  assert.deepEqual(
    ofA.body.items.map((i) => [i.alert_count, i.last_alert_at]).reverse(),
    [...INCIDENTS_A.map((row) => [row[1], row[2]]), [1, at(80)]],
    'the MSSP view carries the same alert counts as the customer’s',
  );
  const fleet = await analyst.mssp.fleetSummary();
  assert.ok(fleet.status === 200);
  assert.deepEqual(Object.fromEntries(fleet.body.tenants.map((t) => [t.slug, t.open_incidents])), {
    'iso-alpha': INCIDENTS_A.length + 1,
    'iso-bravo': INCIDENTS_B.length,
  });
});

test("§4.4 §9.5.5 A's adapter token naming tenant B is 400 validation_failed and writes nothing", async () => {
  // The adapters are done: stopped, so every row counted below is this test's to explain.
  for (const adapter of adapters.splice(0)) assert.equal(await adapter.stop(), 0);
  const token = (await api.tokens.mintAdapter({ tenantId: a.tenantId })).token;
  const batch = {
    alerts: alertsOf(BRAVO, 50, PAM, 2, [90]),
    checkpoint: { search_after: [BASE + 90 * MINUTE, 'x'], index: 'wazuh-alerts-*' },
  };
  const before = await ingestRows();
  const attempts: [string, string, unknown][] = [
    ['tenant_id in the body', '', { ...batch, tenant_id: b.tenantId }],
    ['tenant_id in the query', `?tenant_id=${b.tenantId}`, batch],
  ];
  for (const [why, query, body] of attempts) {
    const res = await fetch(`${api.url}/api/internal/adapter/alerts${query}`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 400, why);
    assert.equal(((await res.json()) as { code: string }).code, 'validation_failed', why);
  }
  assert.deepEqual(await ingestRows(), before, 'no row of either tenant was written');
});

test("§4.4 §9.5.5 A's adapter token posting B's alerts (B's source ids) stores them under A only; B's rows stay as they were", async () => {
  const token = (await api.tokens.mintAdapter({ tenantId: a.tenantId })).token;
  const eventsB = await eventIdsOf(b.tenantId);
  const storedB = await storedSourceIds(db, b.tenantId);
  const incidentsB = await incidentsOf(viewerB);
  // B's alerts as B's indexer holds them; one even claims B inside its document.
  const claimed = [...alertsB.slice(0, 3), { ...alertsB[3], tenant_id: b.tenantId }];
  const res = await fetch(`${api.url}/api/internal/adapter/alerts`, {
    method: 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: JSON.stringify({
      alerts: claimed,
      checkpoint: { search_after: [BASE + 90 * MINUTE, 'claimed'], index: 'wazuh-alerts-*' },
    }),
  });
  assert.equal(res.status, 200);
  assert.deepEqual(
    await res.json(),
    {
      accepted: claimed.length,
      duplicates: 0,
      checkpoint: { search_after: [BASE + 90 * MINUTE, 'claimed'], index: 'wazuh-alerts-*' },
    },
    'new to A: the same source id in two tenants is two alerts',
  );

  const storedA = await storedSourceIds(db, a.tenantId);
  assert.ok(alertsB.every((x) => storedA.get(x.id) === 1));
  assert.deepEqual(await eventIdsOf(b.tenantId), eventsB, "B's events are unchanged");
  assert.deepEqual(await storedSourceIds(db, b.tenantId), storedB);
  // A's projection takes them as A's incidents; B's view stays as it was.
  await projected(viewerA, [
    ...INCIDENTS_A,
    ['rule:31103/agent:002', 1, at(80)],
    ['rule:5503/agent:003', 3, at(2)],
    ['rule:550/agent:003', 1, at(7)],
  ]);
  await projector.idle();
  assert.deepEqual(await incidentsOf(viewerB), incidentsB);
  const { rows } = await db.pools.mssp.query<{ tenant_id: string }>(
    `SELECT DISTINCT tenant_id FROM events WHERE payload->'alert'->>'tenant_id' = $1`,
    [b.tenantId],
  );
  assert.deepEqual(
    rows.map((r) => r.tenant_id),
    [a.tenantId],
    'a tenant named inside an alert is just data',
  );
});
