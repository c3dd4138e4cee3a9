import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { createSvcClient } from '../../contracts/index.ts';
import {
  axe,
  contextOptions,
  type Expected,
  MOBILE,
  type SeededTenant,
  type SeededUser,
  type SvcProcess,
  seedTenant,
  seedUser,
  signIn,
  watch,
  webSuite,
} from './support.ts';

/**
 * Issue 14 "Customer portal pages": overview with charts from the projections, incidents with
 * filters, cursor pages, detail and live updates, reports, the audit trail with impersonation
 * flagged, account/password; every page at 390 px in dark mode with axe and a clean console.
 * The read models are seeded as rows (the projector's output); the impersonated audit entry is
 * made for real, through an impersonation token.
 */
const SEVERITIES = ['critical', 'high', 'medium', 'low', 'info'] as const;
const STATUSES = ['open', 'triaging', 'awaiting_review', 'resolved', 'closed'] as const;
const INCIDENTS = Array.from({ length: 60 }, (_, i) => ({
  title: `Acme incident ${String(i).padStart(2, '0')}`,
  // Never `info`, so that filter finds nothing.
  severity: SEVERITIES[i % 4] ?? 'critical',
  status: STATUSES[Math.floor(i / 5) % 5] ?? 'open',
  minutesAgo: i + 1,
}));
const DETAILED = {
  id: randomUUID(),
  title: 'Ransomware note on FS01',
  summary: 'Triage found a ransom note dropped by a process started from a mail attachment.',
  source_ref: 'wazuh:alert/1700000000.42',
};

const ACME = {
  slug: 'acme',
  appName: 'Acme Shield',
  primaryColor: '#0b5394',
  secondaryColor: '#e69138',
};
let acme: SeededTenant;
let viewer: SeededUser;
const suite = webSuite(async (svc) => {
  acme = await seedTenant(svc, ACME);
  viewer = await seedUser(svc, { role: 'customer_viewer', tenant: acme });
  await seedReadModels(svc, acme.id);
  await impersonatedUserCreate(svc, acme.id);
});

const ME_401 = { path: '/api/auth/me', status: 401 } as const;

/** Rows as the projector leaves them (docs/projections.md): investigations, metrics, stats. */
async function seedReadModels(svc: SvcProcess, tenantId: string): Promise<void> {
  const sql = svc.sql;
  for (const i of INCIDENTS) {
    await sql.query(
      `INSERT INTO investigations (tenant_id, title, severity, status, opened_at, updated_at)
       VALUES ($1, $2, $3, $4, now() - make_interval(mins => $5), now() - make_interval(mins => $5))`,
      [tenantId, i.title, i.severity, i.status, i.minutesAgo],
    );
  }
  await sql.query(
    `INSERT INTO investigations (tenant_id, id, title, summary, severity, status, verdict, source,
       source_ref, alert_count, last_alert_at, opened_at, updated_at, resolved_at)
     VALUES ($1, $2, $3, $4, 'critical', 'resolved', 'true_positive', 'wazuh', $5, 3,
       now() - interval '20 seconds', now() - interval '30 seconds', now() - interval '10 seconds',
       now() - interval '10 seconds')`,
    [tenantId, DETAILED.id, DETAILED.title, DETAILED.summary, DETAILED.source_ref],
  );
  // Today: 7 alerts (4 high, 3 critical); 3 days ago: 5 low; 10 days ago: 11 medium.
  const metrics: [number, string, number][] = [
    [0, 'alerts.received', 7],
    [0, 'alerts.high', 4],
    [0, 'alerts.critical', 3],
    [0, 'investigations.opened', 2],
    [3, 'alerts.received', 5],
    [3, 'alerts.low', 5],
    [10, 'alerts.received', 11],
    [10, 'alerts.medium', 11],
  ];
  for (const [daysAgo, metric, value] of metrics) {
    await sql.query(
      `INSERT INTO metrics_hourly (tenant_id, bucket, metric, value)
       VALUES ($1, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                   - make_interval(days => $2), $3, $4)`,
      [tenantId, daysAgo, metric, value],
    );
  }
  await sql.query(
    `INSERT INTO rule_stats (tenant_id, rule_id, rule_name, fired, true_positives, false_positives, last_fired_at)
     VALUES ($1, '5710', 'sshd: attempt to login using a non-existent user', 40, 2, 30, now()),
            ($1, '100002', 'Ransom note written', 3, 3, 0, now())`,
    [tenantId],
  );
  await sql.query(
    `INSERT INTO ioc_stats (tenant_id, ioc_type, ioc_value, hits, malicious_verdicts, first_seen_at, last_seen_at)
     VALUES ($1, 'ip', '203.0.113.7', 9, 4, now() - interval '5 days', now())`,
    [tenantId],
  );
}

const IMPERSONATION_REASON = 'customer asked for a second login';
const IMPERSONATED_EMAIL = `made-by-mssp-${randomUUID().slice(0, 8)}@web.test`;

/** MSSP staff acting as the tenant create a customer user: audited with `acting_as` (spec §5.8). */
async function impersonatedUserCreate(svc: SvcProcess, tenantId: string): Promise<void> {
  const minted = await svc.admin.mssp.impersonate({
    params: { tenant_id: tenantId },
    body: { reason: IMPERSONATION_REASON },
  });
  assert.equal(minted.status, 200, JSON.stringify(minted.body));
  if (minted.status !== 200) return;
  const acting = createSvcClient({
    baseUrl: svc.consoleUrl,
    headers: { origin: svc.consoleUrl, authorization: `Bearer ${minted.body.token}` },
    cookies: false,
  });
  const created = await acting.mssp.createTenantUser({
    params: { tenant_id: tenantId },
    body: { email: IMPERSONATED_EMAIL },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
}

async function signedIn(viewport = { width: 1280, height: 800 }, expect: Expected[] = []) {
  const w = await suite.open({ viewport, expect: [ME_401, ...expect] });
  await signIn(w.page, suite.svc.portalUrl(acme.slug), viewer);
  return w;
}

function heading(page: Page) {
  return page.getByRole('heading', { level: 1 });
}

function bodyRows(page: Page, region: string) {
  return page.getByRole('region', { name: region }).locator('tbody tr');
}

/** The cells of each row (or the term and value of each field), as text. */
async function cells(rows: Locator, parts = 'th, td'): Promise<string[][]> {
  const out: string[][] = [];
  for (const row of await rows.all()) out.push(await row.locator(parts).allTextContents());
  return out;
}

async function text(locator: Locator): Promise<string> {
  return (await locator.textContent()) ?? '';
}

test('issue 14 Customer portal pages: the overview draws alerts over time, top rules and severity mix with uPlot, each with a data table', async () => {
  const w = await signedIn();
  try {
    const charts = w.page.locator('figure.chart');
    await charts.first().waitFor();
    assert.equal(await charts.count(), 3);
    // uPlot draws a canvas into each figure once its lazy chunk has arrived.
    await w.page.locator('figure.chart canvas').nth(2).waitFor();
    const severity = w.page.getByRole('figure', { name: /Alerts by severity, last 30 days/ });
    await severity.getByText('Critical 3, High 4, Medium 11, Low 5', { exact: true }).waitFor();
    assert.deepEqual(await cells(severity.locator('table.chart-data tbody tr')), [
      ['Critical', '3'],
      ['High', '4'],
      ['Medium', '11'],
      ['Low', '5'],
      ['Info', '0'],
    ]);
    const alerts = w.page.getByRole('figure', { name: /Alerts per day, last 30 days/ });
    await alerts.getByText(/^23 alerts in the last 30 days; the most, 11, on /).waitFor();
    assert.equal(
      await alerts.locator('table.chart-data tbody tr').count(),
      30,
      'one row per day of the window',
    );
    const rules = w.page.getByRole('figure', { name: /Top rules/ });
    await rules.getByText(/Most fired: rule 5710 .*, 40 times\./).waitFor();
    // The numbers from /api/tenant/overview: open, triaging and awaiting_review count as open.
    const open = INCIDENTS.filter((i) =>
      ['open', 'triaging', 'awaiting_review'].includes(i.status),
    );
    const activity = w.page.getByRole('list', { name: 'Activity' });
    await activity.getByText('Open investigations').waitFor();
    assert.equal((await text(activity.locator('.stat-value').first())).trim(), String(open.length));
    await axe(w.page, 'portal overview');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14 Budgets: uPlot is not loaded until a page draws a chart', async () => {
  const w = await signedIn();
  try {
    // Sign-in lands on the overview, which loads uPlot itself; leave that document first so a
    // chart request it still has in flight cannot be counted against the incidents page.
    await w.page.goto('about:blank');
    const scripts: string[] = [];
    w.page.on('request', (r) => {
      if (r.resourceType() === 'script') scripts.push(new URL(r.url()).pathname);
    });
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/incidents`);
    await heading(w.page).filter({ hasText: 'Incidents' }).waitFor();
    await w.page.waitForLoadState('networkidle');
    assert.deepEqual(
      scripts.filter((s) => /uPlot/i.test(s)),
      [],
      `scripts: ${scripts.join(', ')}`,
    );
    await w.page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Overview' })
      .click();
    await w.page.locator('figure.chart canvas').first().waitFor();
    assert.ok(
      scripts.some((s) => /uPlot/i.test(s)),
      'the chart module arrives with the first chart',
    );
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14 Customer portal pages: incidents filter by status and severity, in the URL', async () => {
  const w = await signedIn();
  try {
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/incidents`);
    const rows = bodyRows(w.page, 'Incidents');
    await rows.first().waitFor();
    await w.page.getByLabel('Severity', { exact: true }).selectOption('critical');
    await w.page.waitForURL((u) => u.searchParams.get('severity') === 'critical');
    const critical = INCIDENTS.filter((i) => i.severity === 'critical').length + 1;
    await w.page.getByText(`All ${critical} incidents shown.`).waitFor();
    assert.equal(await rows.count(), critical);
    await w.page.getByLabel('Status', { exact: true }).selectOption('resolved');
    const both = INCIDENTS.filter((i) => i.severity === 'critical' && i.status === 'resolved');
    await w.page.getByText(`All ${both.length + 1} incidents shown.`).waitFor();
    const titles = await rows.locator('td:first-child').allInnerTexts();
    assert.deepEqual(titles.sort(), [DETAILED.title, ...both.map((i) => i.title)].sort());
    // Reloading keeps the filters: they are the URL's.
    await w.page.reload();
    await w.page.getByText(`All ${both.length + 1} incidents shown.`).waitFor();
    assert.equal(await w.page.getByLabel('Status', { exact: true }).inputValue(), 'resolved');
    await w.page.getByLabel('Severity', { exact: true }).selectOption('info');
    await w.page.getByText('No incidents match these filters.').waitFor();
    await axe(w.page, 'incidents, filtered to nothing');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14 Tables paginate with the API cursors: 61 incidents are 50, then the next page', async () => {
  const w = await signedIn();
  try {
    const asked: URL[] = [];
    w.page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname === '/api/tenant/incidents') asked.push(url);
    });
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/incidents`);
    const rows = bodyRows(w.page, 'Incidents');
    await w.page.getByText('Showing the newest 50 incidents.').waitFor();
    assert.equal(await rows.count(), 50);
    await w.page.getByRole('button', { name: 'Show more' }).click();
    await w.page.getByText('All 61 incidents shown.').waitFor();
    assert.equal(await rows.count(), 61);
    assert.equal(await w.page.getByRole('button', { name: 'Show more' }).count(), 0);
    const titles = await rows.locator('td:first-child').allInnerTexts();
    assert.equal(new Set(titles).size, 61, 'every incident once');
    assert.equal(asked.length, 2);
    assert.equal(asked[0]?.searchParams.get('cursor'), null);
    assert.ok(asked[1]?.searchParams.get('cursor'), 'the second page follows next_cursor');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test("issue 14 Customer portal pages: an incident's detail shows every field the API gives it, also on a direct load", async () => {
  // An address naming no incident of the tenant is the detail route's 404.
  const w = await signedIn(undefined, [{ path: /^\/api\/tenant\/incidents\/[^/]+$/, status: 404 }]);
  try {
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/incidents`);
    await w.page.getByRole('link', { name: DETAILED.title }).click();
    await w.page.waitForURL((u) => u.pathname === `/incidents/${DETAILED.id}`);
    const check = async () => {
      await heading(w.page).filter({ hasText: DETAILED.title }).waitFor();
      await w.page.getByText(DETAILED.summary).waitFor();
      const fields = Object.fromEntries(await cells(w.page.locator('dl.fields > div'), 'dt, dd'));
      assert.equal(fields.Severity, 'Critical');
      assert.equal(fields.Status, 'Resolved');
      assert.equal(fields.Verdict, 'True positive');
      assert.equal(fields['Alerts grouped'], '3');
      assert.equal(fields.Source, 'wazuh');
      assert.equal(fields['Source reference'], DETAILED.source_ref);
      assert.equal(fields.Reference, DETAILED.id);
      assert.equal(fields.Closed, 'Not yet');
    };
    await check();
    await w.page.reload();
    await check();
    await axe(w.page, 'incident detail');
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/incidents/${randomUUID()}`);
    await heading(w.page).filter({ hasText: 'Incident not found' }).waitFor();
    w.assertClean();
  } finally {
    await w.close();
  }
});

test("issue 14 Live updates: a new incident appears in the open list from the tenant's event stream", async () => {
  const w = await signedIn();
  try {
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/incidents`);
    await bodyRows(w.page, 'Incidents').first().waitFor();
    await w.page.waitForLoadState('networkidle');
    const id = randomUUID();
    const title = `Live: beaconing from WS-${id.slice(0, 4)}`;
    const client = await suite.svc.sql.connect();
    try {
      // The row and its event in one transaction, as the projector leaves them: the stream's
      // notice comes at commit, when the row is there to be read.
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO investigations (tenant_id, id, title, severity) VALUES ($1, $2, $3, 'high')`,
        [acme.id, id, title],
      );
      await client.query(
        `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at)
         VALUES ($1, 'investigation', $2, 1, 'investigation.opened',
                 jsonb_build_object('investigation_id', $4::text, 'title', $3::text, 'severity', 'high'),
                 'Adapter', now())`,
        [acme.id, id, title, id],
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    await w.page.getByRole('link', { name: title }).waitFor();
    assert.equal(
      await text(bodyRows(w.page, 'Incidents').first().locator('td').first()),
      title,
      'newest first',
    );
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14 Customer portal pages: reports over a chosen period, with top rules and indicators', async () => {
  const w = await signedIn();
  try {
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/reports`);
    const totals = w.page.getByRole('list', { name: 'Totals of the period' });
    await totals.getByText('Alerts', { exact: true }).waitFor();
    assert.match(
      await text(totals.locator('.stat-value').first()),
      /^12$/,
      '7 today + 5 three days ago',
    );
    // docs/reports.md "The portal page": the response figures, one row per day of the window.
    assert.equal(await bodyRows(w.page, 'Response per day').count(), 7);
    await w.page.getByLabel('Period', { exact: true }).selectOption('30');
    await w.page.waitForURL((u) => u.searchParams.get('days') === '30');
    await w.page
      .getByRole('figure', { name: /last 30 days/ })
      .first()
      .waitFor();
    assert.match(await text(totals.locator('.stat-value').first()), /^23$/);
    const weeks = await bodyRows(w.page, 'Response per week').count();
    assert.ok(weeks === 5 || weeks === 6, `30 days span 5 or 6 weeks from Monday (${weeks})`);
    const rules = bodyRows(w.page, 'Top rules');
    assert.deepEqual(await rules.locator('td:first-child').allInnerTexts(), ['5710', '100002']);
    const iocs = bodyRows(w.page, 'Top indicators');
    assert.deepEqual((await cells(iocs.first())).flat().slice(0, 4), [
      'ip',
      '203.0.113.7',
      '9',
      '4',
    ]);
    await axe(w.page, 'reports');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14 Customer portal pages: the audit trail flags MSSP impersonation entries and filters by action', async () => {
  const w = await signedIn();
  try {
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/audit`);
    const rows = bodyRows(w.page, 'Audit entries');
    await rows.first().waitFor();
    // The token's minting (with the staff member's reason) and the user created with it.
    const flagged = rows.filter({ has: w.page.locator('.tag-impersonation') });
    assert.deepEqual(await cells(flagged).then((r) => r.map((c) => c[2]).sort()), [
      'user.create',
      'user.impersonate',
    ]);
    for (const row of await flagged.all()) {
      assert.match(await text(row), /^.*Impersonation.*MSSP staff acting as your organisation/);
    }
    const unflagged = rows.filter({ hasNot: w.page.locator('.tag-impersonation') });
    assert.ok((await unflagged.count()) >= 1, 'the other entries are there, unflagged');
    const created = flagged.filter({ hasText: 'user.create' });
    await created.getByText('Details').click();
    await created.getByText(IMPERSONATED_EMAIL).waitFor();
    const minted = flagged.filter({ hasText: 'user.impersonate' });
    await minted.getByText('Details').click();
    await minted.getByText(IMPERSONATION_REASON).waitFor();

    await w.page.getByLabel('Action', { exact: true }).fill('User Create');
    await w.page.getByRole('button', { name: 'Apply' }).click();
    await w.page
      .getByRole('alert')
      .getByText(/exact name in lower case/)
      .waitFor();
    assert.equal(
      await w.page.getByLabel('Action', { exact: true }).getAttribute('aria-invalid'),
      'true',
    );
    assert.equal(new URL(w.page.url()).search, '', 'nothing applied');

    await w.page.getByLabel('Action', { exact: true }).fill('user.create');
    await w.page.getByRole('button', { name: 'Apply' }).click();
    await w.page.waitForURL((u) => u.searchParams.get('action') === 'user.create');
    // The filtered page replaces the unfiltered rows once its query answers: wait for that
    // (no other action left, two user.create rows there) before reading the cells.
    await rows.filter({ hasNotText: 'user.create' }).first().waitFor({ state: 'detached' });
    await rows.filter({ hasText: 'user.create' }).nth(1).waitFor();
    await w.page.getByText(/^All \d+ entries shown\.$/).waitFor();
    const actions = await rows.locator('td:nth-child(3)').allInnerTexts();
    assert.ok(actions.length >= 2, `user.create rows: ${actions.length}`);
    assert.deepEqual(new Set(actions), new Set(['user.create']));
    await w.page.getByLabel('Action', { exact: true }).fill('no.such_action');
    await w.page.getByRole('button', { name: 'Apply' }).click();
    await w.page.getByText('No entries match these filters.').waitFor();
    await axe(w.page, 'audit');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14 Customer portal pages: account/password is reached from the account menu', async () => {
  const w = await signedIn();
  try {
    await w.page.getByRole('button', { name: viewer.email }).click();
    await w.page.getByRole('link', { name: 'Change password' }).click();
    await w.page.waitForURL((u) => u.pathname === '/account/password');
    await heading(w.page).filter({ hasText: 'Change password' }).waitFor();
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14 Customer portal pages: every page is usable at 390 px in dark mode, axe-clean, without console errors', async () => {
  const context = await suite.browser.newContext({
    ...contextOptions(MOBILE),
    colorScheme: 'dark',
  });
  context.setDefaultTimeout(10_000);
  const w = watch(context, await context.newPage(), [ME_401]);
  try {
    const base = suite.svc.portalUrl(acme.slug);
    await signIn(w.page, base, viewer);
    const background = await w.page.evaluate(
      () =>
        (
          globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }
        ).getComputedStyle((globalThis as unknown as { document: { body: unknown } }).document.body)
          .backgroundColor,
    );
    assert.equal(background, 'rgb(18, 18, 20)', 'the dark palette');
    for (const path of [
      '/',
      '/incidents',
      `/incidents/${DETAILED.id}`,
      '/reports',
      '/audit',
      '/account/password',
    ]) {
      await w.page.goto(`${base}${path}`);
      await heading(w.page).first().waitFor();
      await w.page.waitForLoadState('networkidle');
      await w.page.waitForFunction(
        () =>
          !(
            globalThis as unknown as { document: { body: { textContent: string } } }
          ).document.body.textContent.includes('Loading…'),
      );
      const width = await w.page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } })
            .document.documentElement.scrollWidth,
      );
      assert.ok(width <= MOBILE.width, `${path} scrolls sideways: ${width} px`);
      await axe(w.page, `${path} at 390 px, dark`);
    }
    w.assertClean();
  } finally {
    await context.close();
  }
});
