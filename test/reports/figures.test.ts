import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { createProjectionService } from '../../src/domains/projections/projection-service.ts';
import { openInvestigation, receiveAlert, wazuhAlert, workEvent } from '../projections/support.ts';
import { impersonating, problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * docs/reports.md "Figures": the cross-tenant report's numbers from events appended through
 * the event repository and folded by the projector, each expected number computed by hand
 * below from the scenario's times.
 */
let db: TestDatabase;
let api: TestApi;
let system: SystemGate;
let alpha: string;
let bravo: string;
let admin: SvcClient;

const DAY = 86_400_000;
const MIN = 60_000;
const HOUR = 60 * MIN;
/** A Monday (UTC) two weeks back, so the customer's default 30-day window holds it. */
const MONDAY = (() => {
  const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const weekday = (new Date(today).getUTCDay() + 6) % 7;
  return today - weekday * DAY - 14 * DAY;
})();
const D1 = MONDAY;
const D2 = MONDAY + DAY;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const at = (ms: number) => new Date(ms);

async function investigation(tenant: string, openedAt: number, alerts: number[] = []) {
  const alert = wazuhAlert({ ruleId: '5710', level: 7, at: at(openedAt) });
  const id = await openInvestigation(db.app, tenant, alert, at(openedAt));
  for (const t of alerts)
    await receiveAlert(
      db.app,
      tenant,
      id,
      wazuhAlert({ ruleId: '5710', level: 7, at: at(t) }),
      at(t),
    );
  return id;
}

/** The analyst who takes I1 (investigations.assignee_id refers to users). */
let analystId: string;
const review = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;

async function fold(tenant: string): Promise<void> {
  // Small batches: the figures must not depend on where a batch ends.
  const projections = createProjectionService({ db: db.app, system, batchSize: 3 });
  for (;;) {
    const outcome = await projections.foldNext(tenant);
    assert.equal(outcome.kind, 'folded');
    if (outcome.kind === 'folded' && outcome.caughtUp) return;
  }
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  system = createSystemGate(db.target);
  alpha = await createTenant(db.pools.app, 'alpha');
  bravo = await createTenant(db.pools.app, 'bravo');
  analystId = await db.app.withScope(null, async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO users (tenant_id, email, role) VALUES (NULL, 'desk@mssp.test', 'analyst') RETURNING id`,
    );
    return rows[0]?.id ?? '';
  });

  // I1: opened D1 08:00, two alerts; taken 08:10 (acknowledged after 600 s), a note, closed by
  // an analyst at 10:00 (resolved after 7,200 s).
  const i1 = await investigation(alpha, D1 + 8 * HOUR, [D1 + 8 * HOUR, D1 + 9 * HOUR]);
  await workEvent(
    db.app,
    alpha,
    i1,
    'investigation.assigned',
    { assignee_id: analystId, previous_assignee_id: null },
    at(D1 + 8 * HOUR + 10 * MIN),
  );
  await workEvent(
    db.app,
    alpha,
    i1,
    'note.added',
    { note_id: review(9), body: 'seen', visibility: 'internal' },
    at(D1 + 8 * HOUR + 20 * MIN),
  );
  await workEvent(
    db.app,
    alpha,
    i1,
    'investigation.closed',
    { verdict: 'false_positive', reason: 'noise', by: 'analyst' },
    at(D1 + 10 * HOUR),
  );
  // I2: opened D1 09:00, one alert; closed by the pipeline at 09:30 (1,800 s), never acknowledged.
  const i2 = await investigation(alpha, D1 + 9 * HOUR, [D1 + 9 * HOUR]);
  await workEvent(
    db.app,
    alpha,
    i2,
    'investigation.closed',
    { verdict: 'benign', reason: 'known scanner', by: 'pipeline' },
    at(D1 + 9 * HOUR + 30 * MIN),
    'worker:triage',
  );
  // I3: opened D1 12:00; review R1 requested 12:10, approved 12:40 (waited 1,800 s; the
  // approval acknowledges it after 2,400 s); a case opened at 13:00 resolves it (3,600 s).
  const i3 = await investigation(alpha, D1 + 12 * HOUR);
  await workEvent(
    db.app,
    alpha,
    i3,
    'review.requested',
    { review_id: review(1), proposed_action: 'open_case', rationale: 'C2 beacon' },
    at(D1 + 12 * HOUR + 10 * MIN),
    'worker:triage',
  );
  await workEvent(
    db.app,
    alpha,
    i3,
    'review.approved',
    { review_id: review(1), action: 'open_case' },
    at(D1 + 12 * HOUR + 40 * MIN),
  );
  await workEvent(
    db.app,
    alpha,
    i3,
    'case.opened',
    { review_id: review(1), case_id: 'c-1', case_number: 1 },
    at(D1 + 13 * HOUR),
    'worker:act',
  );
  // I4: opened D1 14:00; review R2 requested 14:05, rejected D2 02:05 without reopening (waited
  // 43,200 s; closes it after 43,500 s; acknowledged then, on D2). Two more reviews decided on
  // D2: R4 waited 600 s, R5 1,200 s (the investigation stays closed).
  const i4 = await investigation(alpha, D1 + 14 * HOUR);
  await workEvent(
    db.app,
    alpha,
    i4,
    'review.requested',
    { review_id: review(2), proposed_action: 'open_case', rationale: 'maybe' },
    at(D1 + 14 * HOUR + 5 * MIN),
    'worker:triage',
  );
  await workEvent(
    db.app,
    alpha,
    i4,
    'review.rejected',
    { review_id: review(2), action: 'open_case', reopen: false, verdict: 'false_positive' },
    at(D2 + 2 * HOUR + 5 * MIN),
  );
  await workEvent(
    db.app,
    alpha,
    i4,
    'review.requested',
    { review_id: review(4), proposed_action: 'close_investigation', rationale: 'again' },
    at(D2 + 6 * HOUR),
    'worker:triage',
  );
  await workEvent(
    db.app,
    alpha,
    i4,
    'review.approved',
    { review_id: review(4), action: 'close_investigation' },
    at(D2 + 6 * HOUR + 10 * MIN),
  );
  await workEvent(
    db.app,
    alpha,
    i4,
    'review.requested',
    { review_id: review(5), proposed_action: 'close_investigation', rationale: 'again' },
    at(D2 + 7 * HOUR),
    'worker:triage',
  );
  await workEvent(
    db.app,
    alpha,
    i4,
    'review.approved',
    { review_id: review(5), action: 'close_investigation' },
    at(D2 + 7 * HOUR + 20 * MIN),
  );
  // I5: opened D2 10:00, one alert; closed by the pipeline 10:30, reopened 11:00 (acknowledged
  // after 3,600 s), severity changed: open again, so in no closed count.
  const i5 = await investigation(alpha, D2 + 10 * HOUR, [D2 + 10 * HOUR]);
  await workEvent(
    db.app,
    alpha,
    i5,
    'investigation.closed',
    { verdict: 'benign', reason: 'x', by: 'pipeline' },
    at(D2 + 10 * HOUR + 30 * MIN),
    'worker:triage',
  );
  await workEvent(
    db.app,
    alpha,
    i5,
    'investigation.reopened',
    { reason: 'new evidence' },
    at(D2 + 11 * HOUR),
  );
  await workEvent(
    db.app,
    alpha,
    i5,
    'investigation.severity_changed',
    { from: 'medium', to: 'high', reason: 'crown jewel' },
    at(D2 + 11 * HOUR + 30 * MIN),
  );
  // I6: opened D2 12:00; review R3 requested and never decided; unassigned (no acknowledgement).
  const i6 = await investigation(alpha, D2 + 12 * HOUR);
  await workEvent(
    db.app,
    alpha,
    i6,
    'review.requested',
    { review_id: review(3), proposed_action: 'open_case', rationale: 'worm' },
    at(D2 + 12 * HOUR),
    'worker:triage',
  );
  await workEvent(
    db.app,
    alpha,
    i6,
    'investigation.assigned',
    { assignee_id: null, previous_assignee_id: null },
    at(D2 + 12 * HOUR + 30 * MIN),
  );
  // Bravo: one investigation on D1 16:00 with one alert, closed by the pipeline after 300 s.
  const b1 = await investigation(bravo, D1 + 16 * HOUR, [D1 + 16 * HOUR]);
  await workEvent(
    db.app,
    bravo,
    b1,
    'investigation.closed',
    { verdict: 'benign', reason: 'x', by: 'pipeline' },
    at(D1 + 16 * HOUR + 5 * MIN),
    'worker:triage',
  );

  // The LLM ledger (llm_usage, one row per tenant and UTC day).
  for (const [tenant, d, cost] of [
    [alpha, D1, 1.25],
    [alpha, D2, 0.5],
    [bravo, D1, 2],
  ] as const)
    await db.app.withTenant(tenant, (tx) =>
      tx.query('INSERT INTO llm_usage (tenant_id, day, cost_usd, calls) VALUES ($1, $2, $3, 1)', [
        tenant,
        day(d),
        cost,
      ]),
    );
  await fold(alpha);
  await fold(bravo);
  admin = await signedInAs({ db, api }, 'mssp_admin');
});
after(async () => {
  await system.close();
  await api.close();
  await db.drop();
});

const ZERO = {
  alerts: 0,
  incidents_opened: 0,
  incidents_closed: 0,
  incidents_resolved: 0,
  auto_closed: 0,
  auto_closed_share: null,
  acknowledged: 0,
  mean_time_to_acknowledge_seconds: null,
  mean_time_to_resolve_seconds: null,
  reviews_decided: 0,
  review_wait_p50_seconds: null,
  review_wait_p95_seconds: null,
  reviews_waiting: 0,
  llm_cost_usd: 0,
};

/** Alpha's two days, by hand from the scenario above. */
const ALPHA_D1 = {
  period_start: day(D1),
  from: day(D1),
  to: day(D1),
  alerts: 3,
  incidents_opened: 4,
  incidents_closed: 2, // I1 (analyst), I2 (pipeline)
  incidents_resolved: 1, // I3
  auto_closed: 1,
  auto_closed_share: 0.5,
  acknowledged: 2, // I1 600 s, I3 2,400 s
  mean_time_to_acknowledge_seconds: 1500,
  mean_time_to_resolve_seconds: 4200, // (7,200 + 1,800 + 3,600) / 3
  reviews_decided: 1,
  review_wait_p50_seconds: 1800,
  review_wait_p95_seconds: 1800,
  reviews_waiting: 1, // R2, decided on D2
  llm_cost_usd: 1.25,
};
const ALPHA_D2 = {
  period_start: day(D2),
  from: day(D2),
  to: day(D2),
  alerts: 1,
  incidents_opened: 2,
  incidents_closed: 1, // I4 by its rejected review; I5 was reopened
  incidents_resolved: 0,
  auto_closed: 0,
  auto_closed_share: 0,
  acknowledged: 2, // I4 43,500 s, I5 3,600 s
  mean_time_to_acknowledge_seconds: 23550,
  mean_time_to_resolve_seconds: 43500,
  reviews_decided: 3, // waits 600, 1,200, 43,200
  review_wait_p50_seconds: 1200,
  review_wait_p95_seconds: 39000, // 1,200 + 0.9 × (43,200 − 1,200)
  reviews_waiting: 1, // R3
  llm_cost_usd: 0.5,
};
const BRAVO_D1 = {
  ...ZERO,
  period_start: day(D1),
  from: day(D1),
  to: day(D1),
  alerts: 1,
  incidents_opened: 1,
  incidents_closed: 1,
  auto_closed: 1,
  auto_closed_share: 1,
  mean_time_to_resolve_seconds: 300,
  llm_cost_usd: 2,
};

function figures(row: Record<string, unknown>) {
  const { tenant_id: _t, tenant_slug: _s, tenant_name: _n, ...rest } = row;
  return rest;
}

test('§2.2 reports: per tenant and UTC day, the figures the events give by hand', async () => {
  const res = await admin.mssp.reports({ query: { period: 'day', from: day(D1), to: day(D2) } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual([res.body.period, res.body.from, res.body.to], ['day', day(D1), day(D2)]);
  const rowsOf = (tenant: string) =>
    res.body.items.filter((r) => r.tenant_id === tenant).map((r) => figures(r));
  assert.deepEqual(rowsOf(alpha), [ALPHA_D1, ALPHA_D2]);
  assert.deepEqual(rowsOf(bravo), [
    BRAVO_D1,
    { ...ZERO, period_start: day(D2), from: day(D2), to: day(D2) },
  ]);
  const slugs = res.body.items.map((r) => [r.tenant_slug, r.tenant_name]);
  assert.ok(slugs.some(([s, n]) => s === 'alpha' && n === 'Tenant alpha'));
});

test('§2.2 reports: weeks start on Monday; a range starting mid-week gives a partial first week', async () => {
  const sunday = D1 - DAY;
  const res = await admin.mssp.reports({
    query: { period: 'week', from: day(sunday), to: day(D2), tenant_id: alpha },
  });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(
    res.body.items.map((r) => figures(r)),
    [
      // The week of the Sunday before, cut to that one day: nothing happened.
      { ...ZERO, period_start: day(D1 - 7 * DAY), from: day(sunday), to: day(sunday) },
      {
        period_start: day(D1),
        from: day(D1),
        to: day(D2),
        alerts: 4,
        incidents_opened: 6,
        incidents_closed: 3,
        incidents_resolved: 1,
        auto_closed: 1,
        auto_closed_share: 1 / 3,
        acknowledged: 4,
        mean_time_to_acknowledge_seconds: 12525, // (600 + 2,400 + 43,500 + 3,600) / 4
        mean_time_to_resolve_seconds: 14025, // (7,200 + 1,800 + 3,600 + 43,500) / 4
        reviews_decided: 4, // 600, 1,200, 1,800, 43,200
        review_wait_p50_seconds: 1500,
        review_wait_p95_seconds: 36990, // 1,800 + 0.85 × (43,200 − 1,800)
        reviews_waiting: 1,
        llm_cost_usd: 1.75,
      },
    ],
  );
});

test('§2.2 reports: a month row adds up what its days count', async () => {
  const month = await admin.mssp.reports({
    query: { period: 'month', from: day(D1), to: day(D2), tenant_id: alpha },
  });
  assert.equal(month.status, 200);
  if (month.status !== 200) return;
  const rows = month.body.items;
  const sum = (key: keyof typeof ALPHA_D1) =>
    rows.reduce((total, r) => total + (r[key] as number), 0);
  assert.equal(rows[0]?.from, day(D1));
  assert.equal(rows.at(-1)?.to, day(D2));
  for (const key of [
    'alerts',
    'incidents_opened',
    'incidents_closed',
    'incidents_resolved',
    'reviews_decided',
  ] as const)
    assert.equal(sum(key), (ALPHA_D1[key] as number) + (ALPHA_D2[key] as number), key);
  assert.equal(sum('llm_cost_usd'), 1.75);
});

test('§2.2 reports: pages of one row give every row once, in tenant then period order', async () => {
  const query = { period: 'day' as const, from: day(D1), to: day(D2) };
  const whole = await admin.mssp.reports({ query: { ...query, limit: 200 } });
  assert.equal(whole.status, 200);
  if (whole.status !== 200) return;
  const paged: unknown[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 50; pages++) {
    const res = await admin.mssp.reports({
      query: { ...query, limit: 1, ...(cursor ? { cursor } : {}) },
    });
    assert.equal(res.status, 200);
    if (res.status !== 200) return;
    assert.ok(res.body.items.length <= 1);
    paged.push(...res.body.items);
    if (res.body.next_cursor === null) break;
    cursor = res.body.next_cursor;
  }
  assert.equal(whole.body.next_cursor, null);
  assert.deepEqual(paged, whole.body.items);
  assert.ok(paged.length >= 4);
});

async function gateEntries(): Promise<Array<{ request_id: string | null }>> {
  const { rows } = await db.pools.mssp.query<{ request_id: string | null }>(
    `SELECT request_id FROM audit_log WHERE actor_id = 'system:mssp.reports' ORDER BY "timestamp"`,
  );
  return rows;
}

test('§4 rule 2 a report enters the system gate once, audited as System with mssp.reports and the request id', async () => {
  const before = await gateEntries();
  const res = await admin.mssp.reports({ query: { from: day(D1), to: day(D2) } });
  assert.equal(res.status, 200);
  const entries = await gateEntries();
  assert.equal(entries.length, before.length + 1);
  assert.equal(entries.at(-1)?.request_id, res.headers.get('x-request-id'));
});

test('docs/reports.md "Ranges": bad ranges and periods answer problem+json with stable codes, before the gate', async () => {
  const before = await gateEntries();
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ from: day(D2), to: day(D1) }, 400, 'report_range_inverted'],
    [{ period: 'day', from: '2024-01-01', to: '2025-12-31' }, 400, 'report_range_too_long'],
    [{ period: 'week', from: '2020-01-01', to: '2025-12-31' }, 400, 'report_range_too_long'],
    [{ period: 'month', from: '2000-01-01', to: '2025-12-31' }, 400, 'report_range_too_long'],
    [{ from: '2026-02-30' }, 400, 'invalid_report_date'],
    [{ to: '2026-13-01' }, 400, 'invalid_report_date'],
    [{ from: '1969-12-31', to: '1970-01-02' }, 400, 'invalid_report_date'],
    [{ period: 'year' }, 400, 'validation_failed'],
    [{ from: '26-3-1' }, 400, 'validation_failed'],
    [{ tenant_id: 'alpha' }, 400, 'validation_failed'],
    [{ format: 'xlsx' }, 400, 'validation_failed'],
    [{ limit: 0 }, 400, 'validation_failed'],
    [{ cursor: 'bm90LWEtY3Vyc29y' }, 400, 'invalid_cursor'],
  ];
  for (const [query, status, code] of cases) {
    const res = await admin.mssp.reports({ query: query as never });
    assert.equal(res.status, status, JSON.stringify(query));
    assert.equal(problemCode(res), code, JSON.stringify(query));
    assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  }
  // The longest ranges allowed are answered.
  for (const query of [
    { period: 'day' as const, from: '2025-01-01', to: '2026-01-01' },
    { period: 'month' as const, from: '2021-01-01', to: '2025-12-31' },
  ]) {
    const res = await admin.mssp.reports({ query: { ...query, tenant_id: bravo, limit: 1 } });
    assert.equal(res.status, 200, JSON.stringify(query));
  }
  // Only the two answered reads entered the gate.
  assert.equal((await gateEntries()).length, before.length + 2);
});

test('§5.8 reports are for mssp_admin and platform_admin: an analyst is 403, a customer 403 wrong_family, an impersonation token 403', async () => {
  const platform = await signedInAs({ db, api }, 'platform_admin');
  assert.equal((await platform.mssp.reports({ query: {} })).status, 200);
  const analyst = await signedInAs({ db, api }, 'analyst');
  const refused = await analyst.mssp.reports({ query: {} });
  assert.deepEqual([refused.status, problemCode(refused)], [403, 'forbidden']);
  const customer = await signedInAs({ db, api }, 'customer_viewer', { tenantId: alpha });
  const wrong = await customer.mssp.reports({ query: { tenant_id: alpha } });
  assert.deepEqual([wrong.status, problemCode(wrong)], [403, 'wrong_family']);
  const token = await impersonating(api, admin, alpha, 'monthly review');
  const before = await gateEntries();
  const asAlpha = await token.mssp.reports({ query: { tenant_id: alpha } });
  assert.deepEqual([asAlpha.status, problemCode(asAlpha)], [403, 'outside_impersonated_tenant']);
  assert.equal((await gateEntries()).length, before.length, 'refused before the gate');
});

test("§2.2 the customer's /api/tenant/reports carries the same figures for its own tenant only", async () => {
  const customer = await signedInAs({ db, api }, 'customer_viewer', { tenantId: bravo });
  const res = await customer.tenant.reports({ query: { days: 30 } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.equal(res.body.period, 'day');
  assert.equal(res.body.figures.length, 30);
  assert.deepEqual(res.body.figures.at(0)?.from, res.body.from);
  assert.deepEqual(res.body.figures.at(-1)?.to, res.body.to);
  const d1 = res.body.figures.find((f) => f.period_start === day(D1));
  assert.deepEqual(d1, BRAVO_D1);
  // Alpha's work is nowhere in bravo's figures.
  const total = (key: 'incidents_opened' | 'reviews_decided' | 'alerts') =>
    res.body.figures.reduce((sum, f) => sum + f[key], 0);
  assert.deepEqual(
    [total('incidents_opened'), total('reviews_decided'), total('alerts')],
    [1, 0, 1],
  );

  const weekly = await customer.tenant.reports({ query: { days: 30, period: 'week' } });
  assert.equal(weekly.status, 200);
  if (weekly.status !== 200) return;
  assert.equal(weekly.body.period, 'week');
  const week = weekly.body.figures.find((f) => f.period_start === day(D1));
  assert.equal(week?.incidents_closed, 1);
  assert.equal(week?.llm_cost_usd, 2);
  // A tenant is never named: the closed query refuses one.
  const probe = await customer.tenant.reports({ query: { tenant_id: alpha } as never });
  assert.deepEqual([probe.status, problemCode(probe)], [400, 'validation_failed']);
  const bad = await customer.tenant.reports({ query: { period: 'year' } as never });
  assert.deepEqual([bad.status, problemCode(bad)], [400, 'validation_failed']);
});
