import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  axe,
  type SeededTenant,
  type SeededUser,
  type SvcProcess,
  seedTenant,
  seedUser,
  webSuite,
} from './support.ts';

/**
 * docs/reports.md, in a real browser against a real svc: the mssp_admin reads the cross-tenant
 * report (figures folded by svc's own projector from events) and exports it as CSV.
 */
let north: SeededTenant;
let south: SeededTenant;
let admin: SeededUser;
const DAY = 86_400_000;
/** A UTC day three days back: inside any default range. */
const D = Date.parse(`${new Date(Date.now() - 3 * DAY).toISOString().slice(0, 10)}T00:00:00Z`);
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** An investigation opened at `openedAt` and closed `closeAfterMs` later by `by`. */
async function closedInvestigation(
  svc: SvcProcess,
  tenantId: string,
  openedAt: number,
  closeAfterMs: number,
  by: 'pipeline' | 'analyst',
): Promise<void> {
  const id = randomUUID();
  const events = [
    {
      type: 'investigation.opened',
      at: openedAt,
      payload: {
        investigation_id: id,
        title: 'Brute force on VPN',
        severity: 'high',
        source: 'wazuh',
        source_ref: 'rule:5710/agent:001',
        rule_id: '5710',
        agent_id: '001',
      },
    },
    {
      type: 'investigation.closed',
      at: openedAt + closeAfterMs,
      payload: { investigation_id: id, verdict: 'false_positive', reason: 'noise', by },
    },
  ];
  for (const [i, e] of events.entries())
    await svc.sql.query(
      `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor,
                           occurred_at)
       VALUES ($1, 'investigation', $2, $3, $4, $5, $6, $7)`,
      [tenantId, id, i + 1, e.type, JSON.stringify(e.payload), 'worker:triage', new Date(e.at)],
    );
}

const suite = webSuite(async (svc) => {
  north = await seedTenant(svc, {
    slug: 'north',
    appName: 'North Co',
    primaryColor: '#113355',
    secondaryColor: '#eeeeee',
  });
  south = await seedTenant(svc, {
    slug: 'south',
    appName: 'South Co',
    primaryColor: '#553311',
    secondaryColor: '#eeeeee',
  });
  // North: two closed on D, one by the pipeline after 10 min, one by an analyst after 30 min.
  await closedInvestigation(svc, north.id, D + 9 * 3_600_000, 10 * 60_000, 'pipeline');
  await closedInvestigation(svc, north.id, D + 10 * 3_600_000, 30 * 60_000, 'analyst');
  // South: one, closed by an analyst after 2 h.
  await closedInvestigation(svc, south.id, D + 11 * 3_600_000, 2 * 3_600_000, 'analyst');
  await svc.sql.query(
    `INSERT INTO llm_usage (tenant_id, day, cost_usd, calls) VALUES ($1, $2, 1.5, 3)`,
    [south.id, day(D)],
  );
  admin = await seedUser(svc, { role: 'mssp_admin' });
  // svc's projector folds the events on its own: wait until both tenants' closes are in.
  for (let tries = 0; ; tries++) {
    const { rows } = await svc.sql.query<{ n: string }>(
      `SELECT count(*) AS n FROM report_investigations WHERE ended_at IS NOT NULL
          AND tenant_id IN ($1, $2)`,
      [north.id, south.id],
    );
    if (Number(rows[0]?.n) === 3) break;
    assert.ok(tries < 200, 'the projector folds the seeded events');
    await sleep(50);
  }
});

test('docs/reports.md: the mssp_admin reads the cross-tenant report per tenant and day, with charts, and exports it as CSV', async () => {
  const w = await suite.open({ session: { user: admin, at: suite.svc.consoleUrl } });
  try {
    const { page } = w;
    await page.goto(`${suite.svc.consoleUrl}/reports`);
    // The page's chunk loads on first use; a busy machine may take longer than a click.
    await page.getByRole('heading', { level: 1, name: 'Reports' }).waitFor({ timeout: 30_000 });
    await page.getByRole('navigation').getByRole('link', { name: 'Reports' }).waitFor();
    await page.getByLabel('Period', { exact: true }).selectOption('day');
    await page.getByLabel('From (UTC day)').fill(day(D));
    await page.getByLabel('To (UTC day)').fill(day(D));
    const answered = page.waitForResponse(
      (r) => new URL(r.url()).pathname === '/api/mssp/reports' && r.url().includes(day(D)),
    );
    await page.getByRole('button', { name: 'Show report' }).click();
    assert.equal((await answered).status(), 200);

    const table = page.getByRole('table', { name: 'Figures per tenant and period' });
    const rowOf = (slug: string) =>
      table.getByRole('row').filter({ has: page.getByRole('cell', { name: slug, exact: true }) });
    await rowOf('north').waitFor();
    const cells = async (slug: string) =>
      (await rowOf(slug).getByRole('cell').allInnerTexts()).map((t) => t.trim());
    // Tenant, period, alerts, opened, closed, resolved, auto-closed, MTTA, MTTR, p50, p95,
    // waiting, LLM cost.
    assert.deepEqual(await cells('north'), [
      'north',
      day(D),
      '0',
      '2',
      '2',
      '0',
      '50 %',
      // Only the analyst's close acknowledges (after 30 min); the pipeline's does not.
      '30 min',
      '20 min',
      '–',
      '–',
      '0',
      '$0.00',
    ]);
    assert.deepEqual(await cells('south'), [
      'south',
      day(D),
      '0',
      '1',
      '1',
      '0',
      '0 %',
      '2 h 00 min',
      '2 h 00 min',
      '–',
      '–',
      '0',
      '$1.50',
    ]);
    await page.getByRole('figure', { name: /Incidents and alerts per day/ }).waitFor();
    await page.getByRole('figure', { name: /LLM cost per tenant/ }).waitFor();
    await axe(page, 'cross-tenant reports');

    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Export CSV' }).click();
    const file = await download;
    assert.equal(file.suggestedFilename(), `svc-report-day-${day(D)}-${day(D)}.csv`);
    const path = await file.path();
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\r\n');
    assert.match(lines[0] ?? '', /^tenant_id,tenant_slug,tenant_name,period_start,/);
    const north = lines.find((l) => l.includes(',north,'));
    assert.ok(north?.includes(`,North Co,${day(D)},${day(D)},${day(D)},0,2,2,0,1,0.5,`), north);
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('docs/reports.md: an analyst has no Reports page in the console', async () => {
  const analyst = await seedUser(suite.svc, { role: 'analyst' });
  const w = await suite.open({ session: { user: analyst, at: suite.svc.consoleUrl } });
  try {
    await w.page.goto(`${suite.svc.consoleUrl}/`);
    await w.page.getByRole('heading', { level: 1 }).first().waitFor();
    const nav = w.page.getByRole('navigation');
    await nav.getByRole('link', { name: 'Incidents' }).waitFor();
    assert.equal(await nav.getByRole('link', { name: 'Reports' }).count(), 0);
    w.assertClean();
  } finally {
    await w.close();
  }
});
