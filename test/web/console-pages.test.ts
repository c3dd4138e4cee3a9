import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page, Request } from 'playwright-core';
import { createSvcClient } from '../../contracts/index.ts';
import { NOT_ALLOWED } from '../../web/shared/texts.ts';
import {
  axe,
  type Expected,
  MOBILE,
  type SeededTenant,
  type SeededUser,
  seedTenant,
  seedUser,
  signIn,
  USER_PASSWORD,
  type WatchedPage,
  walkPages,
  webSuite,
} from './support.ts';

/**
 * Issue 14 "MSSP console pages" and spec §5.9 item 6, in a real browser against a real svc:
 * fleet, tenants (list, create, detail, live provisioning, decommission), incidents, review
 * queue, audit log and export, users and the admin reset, view as customer, triage policy.
 */
let acme: SeededTenant;
let admin: SeededUser;
let msspAdmin: SeededUser;
let analyst: SeededUser;
let viewer: SeededUser;
const INCIDENT = 'Brute force against vpn-gw-1';

const suite = webSuite(async (svc) => {
  acme = await seedTenant(svc, {
    slug: 'acme',
    appName: 'Acme Shield',
    primaryColor: '#0b5394',
    secondaryColor: '#f1c232',
    incidents: [INCIDENT],
  });
  // One at a time: a third sign-in at once from one address is a 429 (docs/auth.md).
  admin = await seedUser(svc, { role: 'platform_admin' });
  msspAdmin = await seedUser(svc, { role: 'mssp_admin' });
  analyst = await seedUser(svc, { role: 'analyst' });
  viewer = await seedUser(svc, { role: 'customer_viewer', tenant: acme });
});

/** The SPA's first question on a fresh page is who is signed in: nobody is a 401. */
const ME_401: Expected = { path: '/api/auth/me', status: 401 };

async function signedIn<T>(
  user: SeededUser,
  fn: (w: WatchedPage) => Promise<T>,
  options: { viewport?: { width: number; height: number }; expect?: Expected[] } = {},
): Promise<T> {
  const w = await suite.open({ ...options, expect: [ME_401, ...(options.expect ?? [])] });
  try {
    await signIn(w.page, suite.svc.consoleUrl, user);
    await w.page.getByRole('heading', { level: 1 }).first().waitFor();
    return await fn(w);
  } finally {
    await w.close();
  }
}

async function open(page: Page, path: string, heading?: string | RegExp): Promise<void> {
  await page.goto(`${suite.svc.consoleUrl}${path}`);
  const h1 = page.getByRole('heading', { level: 1 });
  if (heading) await h1.filter({ hasText: heading }).waitFor();
  else await h1.first().waitFor();
}

async function insertTenant(slug: string, state: string): Promise<string> {
  const { rows } = await suite.svc.sql.query<{ id: string }>(
    `INSERT INTO tenants (slug, display_name, state) VALUES ($1, $2, $3) RETURNING id`,
    [slug, `${slug} display`, state],
  );
  const id = rows[0]?.id;
  assert.ok(id);
  return id;
}

async function lifecycleStep(tenantId: string, step: string): Promise<void> {
  await suite.svc.sql.query(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, actor) VALUES ($1, 'step', $2, 'orchestrator')`,
    [tenantId, step],
  );
}

/** A session of the typed SDK: which password signs `email` in now. */
async function apiSignIn(email: string, password: string) {
  const client = createSvcClient({
    baseUrl: suite.svc.consoleUrl,
    headers: { origin: suite.svc.consoleUrl },
  });
  return client.auth.login({ body: { email, password } });
}

test('§5.9.6 admin reset: confirmation modal, the generated password shown once in a copy field, gone after closing', async () => {
  const target = await seedUser(suite.svc, { role: 'analyst' });
  await signedIn(admin, async (w) => {
    const { page } = w;
    await open(page, `/users/${target.id}`, target.email);
    await page.getByRole('button', { name: 'Reset password' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('heading', { name: `Reset the password of ${target.email}?` }).waitFor();
    assert.equal(
      await dialog.getByLabel('Generated password').count(),
      0,
      'nothing before confirm',
    );
    await axe(page, 'reset confirmation modal');
    const answered = page.waitForResponse((r) => r.url().endsWith('/password/reset'));
    await dialog.getByRole('button', { name: 'Reset password' }).click();
    assert.equal((await answered).status(), 200);
    const field = dialog.getByLabel('Generated password');
    const password = await field.inputValue();
    assert.ok(password.length >= 12, 'a generated password is in the copy field');
    assert.equal(await field.getAttribute('readonly'), '', 'read-only: copied, not edited');
    await dialog.getByRole('button', { name: 'Copy' }).waitFor();
    await axe(page, 'reset result modal');

    // The reset took effect: the old password is refused, the shown one signs in, must_change.
    assert.equal((await apiSignIn(target.email, USER_PASSWORD)).status, 401);
    const fresh = await apiSignIn(target.email, password);
    assert.equal(fresh.status, 200);
    assert.equal(fresh.status === 200 && fresh.body.identity.must_change, true);

    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.ok(!(await page.content()).includes(password), 'not in the page after closing');
    await page.getByRole('button', { name: 'Reset password' }).click();
    await dialog.getByRole('heading', { name: /Reset the password/ }).waitFor();
    assert.equal(await dialog.getByLabel('Generated password').count(), 0, 'not retrievable');
    w.assertClean();
  });
});

test('§5.9.6 the reset button is shown to platform_admin and mssp_admin only where the API lets them reset', async () => {
  const reset = (page: Page) => page.getByRole('button', { name: 'Reset password' });
  const customerPage = `/users/${viewer.id}?tenant=${acme.id}`;
  await signedIn(admin, async (w) => {
    await open(w.page, `/users/${admin.id}`, admin.email);
    assert.equal(await reset(w.page).count(), 0, 'not for oneself (409 cannot_reset_self)');
    await open(w.page, `/users/${analyst.id}`, analyst.email);
    assert.equal(await reset(w.page).count(), 1, 'platform_admin: any other user');
    w.assertClean();
  });
  await signedIn(msspAdmin, async (w) => {
    await open(w.page, `/users/${analyst.id}`, analyst.email);
    assert.equal(await reset(w.page).count(), 0, 'mssp_admin: not MSSP staff');
    await open(w.page, customerPage, viewer.email);
    assert.equal(await reset(w.page).count(), 1, 'mssp_admin: customer users');
    w.assertClean();
  });
  await signedIn(analyst, async (w) => {
    await open(w.page, `/users/${msspAdmin.id}`, msspAdmin.email);
    assert.equal(await reset(w.page).count(), 0, 'analyst: never');
    w.assertClean();
  });
});

test('issue 14: role-aware console: what a role may not do is not offered', async () => {
  await signedIn(analyst, async (w) => {
    const { page } = w;
    await open(page, '/tenants', 'Tenants');
    await page.getByRole('link', { name: 'Acme Shield' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Create tenant' }).count(), 0);
    await open(page, `/tenants/${acme.id}`, 'Acme Shield');
    assert.equal(await page.getByRole('button', { name: 'Decommission' }).count(), 0);
    assert.equal(await page.getByLabel('Upgrade to tenant package version').count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Users', exact: true }).count(), 1, 'nav');
    await open(page, '/audit', 'Audit log');
    assert.equal(
      await page.getByRole('link', { name: 'CSV' }).count(),
      0,
      'export: platform_admin',
    );
    await open(page, '/users', 'Users');
    assert.equal(await page.getByRole('heading', { name: 'Add an MSSP user' }).count(), 0);
    assert.equal(await page.getByRole('heading', { name: 'Customer users' }).count(), 0);
    await open(page, `/tenants/${acme.id}/policy`, 'Triage policy');
    assert.equal(await page.getByRole('button', { name: 'Save policy' }).count(), 0);
    assert.ok(await page.getByLabel('Minimum model confidence').isDisabled());
    await page.goto(`${suite.svc.consoleUrl}/tenants/new`);
    await page.getByText(NOT_ALLOWED).waitFor();
    w.assertClean();
  });
  await signedIn(msspAdmin, async (w) => {
    const { page } = w;
    await open(page, '/users', 'Users');
    const roles = await page
      .getByLabel('Role')
      .locator('option')
      .evaluateAll((options) => options.map((o) => (o as unknown as { value: string }).value));
    assert.deepEqual(roles, ['analyst'], 'mssp_admin invites analysts only');
    await open(page, '/audit', 'Audit log');
    assert.equal(await page.getByRole('link', { name: 'CSV' }).count(), 0);
    w.assertClean();
  });
  await signedIn(admin, async (w) => {
    const { page } = w;
    await open(page, '/tenants', 'Tenants');
    await page.getByRole('link', { name: 'Create tenant' }).waitFor();
    await open(page, `/tenants/${acme.id}`, 'Acme Shield');
    await page.getByRole('button', { name: 'Decommission' }).waitFor();
    await open(page, '/audit', 'Audit log');
    await page.getByRole('link', { name: 'CSV' }).waitFor();
    await open(page, '/users', 'Users');
    const roles = await page.getByLabel('Role').locator('option').count();
    assert.equal(roles, 3, 'platform_admin hands out every MSSP role');
    w.assertClean();
  });
});

test("issue 14: tenants list pages with the API's cursor and filters by state", async () => {
  for (let i = 0; i < 55; i++) await insertTenant(`bulk-${String(i).padStart(2, '0')}`, 'active');
  const pendingId = await insertTenant('waiting-one', 'pending');
  const { rows } = await suite.svc.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM tenants`,
  );
  const total = rows[0]?.n ?? 0;
  assert.ok(total > 50, 'more tenants than one page');
  await signedIn(admin, async (w) => {
    const { page } = w;
    const bodyRows = page.locator('table tbody tr');
    await open(page, '/tenants', 'Tenants');
    await bodyRows.first().waitFor();
    assert.equal(await bodyRows.count(), 50, 'the first page');
    const next = page.waitForRequest((r) => r.url().includes('cursor='));
    await page.getByRole('button', { name: 'Show more' }).click();
    await next;
    await bodyRows.nth(total - 1).waitFor();
    assert.equal(await bodyRows.count(), total, 'both pages, once each');
    assert.equal(await page.getByRole('button', { name: 'Show more' }).count(), 0);

    await page.getByLabel('State').selectOption('pending');
    await page.waitForURL(/state=pending/);
    // The pending tenant was on the unfiltered pages too: wait for the filtered rows to replace
    // them (no row left in another state) before reading the cells.
    await bodyRows.filter({ hasNotText: 'pending' }).first().waitFor({ state: 'detached' });
    await page.locator(`a[href="/tenants/${pendingId}"]`).waitFor();
    const states = await bodyRows.locator('td:nth-child(3)').allTextContents();
    assert.ok(states.length >= 1 && states.every((s) => s.startsWith('pending')), states.join());
    w.assertClean();
  });
});

test('issue 14: tenant create shows problem+json errors per field, and the API refusal as an alert', async () => {
  await signedIn(
    admin,
    async (w) => {
      const { page } = w;
      await open(page, '/tenants/new', 'Create tenant');
      await page.getByLabel('Slug').fill('Not A Slug');
      await page.getByLabel('Display name').fill('New Co');
      await page.getByLabel('Give the portal its own look').check();
      await page.getByLabel('App name').fill('New Co Portal');
      await page.getByLabel('Logo URL (optional)').fill('http://insecure.example/logo.png');
      await page.getByRole('button', { name: 'Create tenant' }).click();
      await page.getByRole('alert').waitFor();
      const slug = page.getByLabel('Slug');
      assert.equal(await slug.getAttribute('aria-invalid'), 'true');
      const describedBy = (await slug.getAttribute('aria-describedby')) ?? '';
      assert.match(describedBy, /tenant-slug-error/);
      assert.ok((await page.locator('#tenant-slug-error').textContent())?.trim());
      const logo = page.getByLabel('Logo URL (optional)');
      assert.equal(
        await logo.getAttribute('aria-invalid'),
        'true',
        'nested pointer /branding/logo_url',
      );
      assert.equal(await page.getByLabel('Display name').getAttribute('aria-invalid'), null);
      await axe(page, 'create tenant with field errors');

      // A valid configuration: this svc has no cluster, so the API refuses it with 503.
      await slug.fill('new-co');
      await logo.fill('');
      const answered = page.waitForResponse((r) => r.url().endsWith('/api/mssp/tenants'));
      await page.getByRole('button', { name: 'Create tenant' }).click();
      assert.equal((await answered).status(), 503);
      await page
        .getByRole('alert')
        .filter({ hasText: /cluster/i })
        .waitFor();
      assert.equal(await slug.getAttribute('aria-invalid'), null);
      w.assertClean();
    },
    {
      expect: [
        { path: '/api/mssp/tenants', status: 400 },
        { path: '/api/mssp/tenants', status: 503 },
      ],
    },
  );
});

test('issue 14: tenant detail follows provisioning live over the tenant event stream', async () => {
  const id = await insertTenant('rising', 'pending');
  await lifecycleStep(id, 'install_secrets_written');
  await signedIn(admin, async (w) => {
    const { page } = w;
    const stream = page.waitForRequest((r) => r.url().endsWith(`/api/mssp/tenants/${id}/events`));
    await open(page, `/tenants/${id}`, 'rising display');
    await stream;
    await page.getByText('Install Secrets written: done').waitFor();
    await page.getByText('Namespace created: in progress').waitFor();
    // Under the page's 15 s fallback poll: only the stream can bring it this fast.
    await page.waitForTimeout(500);
    const started = Date.now();
    await lifecycleStep(id, 'namespace_created');
    await page.getByText('Namespace created: done').waitFor({ timeout: 5_000 });
    await page.getByText('Bootstrap Secrets written: in progress').waitFor();
    assert.ok(Date.now() - started < 5_000);
    await page.getByRole('cell', { name: /namespace_created/ }).waitFor();
    w.assertClean();
  });
});

test('issue 14: decommission needs the slug typed to confirm', async () => {
  const id = await insertTenant('doomed', 'active');
  await signedIn(admin, async (w) => {
    const { page } = w;
    await open(page, `/tenants/${id}`, 'doomed display');
    await page.getByRole('button', { name: 'Decommission' }).click();
    const dialog = page.getByRole('dialog');
    const confirm = dialog.getByRole('button', { name: 'Decommission doomed' });
    assert.ok(await confirm.isDisabled(), 'disabled until the slug is typed');
    await dialog.getByLabel('Slug').fill('doome');
    assert.ok(await confirm.isDisabled());
    await dialog.getByLabel('Slug').fill('doomed');
    assert.ok(await confirm.isEnabled());
    await axe(page, 'decommission modal');
    const answered = page.waitForResponse((r) => r.url().endsWith(':decommission'));
    await confirm.click();
    assert.equal((await answered).status(), 200);
    await dialog.waitFor({ state: 'hidden' });
    await page.locator('.state-badge', { hasText: 'decommissioning' }).waitFor();
    const { rows } = await suite.svc.sql.query<{ state: string }>(
      `SELECT state FROM tenants WHERE id = $1`,
      [id],
    );
    assert.equal(rows[0]?.state, 'decommissioning');
    w.assertClean();
  });
});

test('issue 14: review queue shows the proposal and decides it with a note (reject with a verdict)', async () => {
  const tenant = await seedTenant(suite.svc, {
    slug: 'reviewed',
    appName: 'Reviewed Inc',
    primaryColor: '#222222',
    secondaryColor: '#dddddd',
    incidents: ['Suspicious PowerShell'],
  });
  const { rows } = await suite.svc.sql.query<{ id: string; action: string }>(
    `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, action_params,
       rationale, evidence, risk, confidence, requested_by)
     SELECT tenant_id, id, a.action, '{"host":"ws-042"}', 'Encoded command from Office macro',
       '[{"analyzer":"VirusTotal","verdict":"malicious"}]', 'high', 0.85, 'triage'
     FROM investigations, (VALUES ('isolate_host'), ('close_case')) AS a(action)
     WHERE tenant_id = $1 RETURNING id, proposed_action AS action`,
    [tenant.id],
  );
  assert.equal(rows.length, 2);
  await signedIn(analyst, async (w) => {
    const { page } = w;
    await open(page, '/reviews', 'Review queue');
    await page.getByLabel('Tenant').selectOption(tenant.id);
    const card = (action: string) =>
      page.locator('li.card').filter({ has: page.getByRole('heading', { name: action }) });
    const isolate = card('isolate_host');
    await isolate.waitFor();
    const text = (await isolate.textContent()) ?? '';
    for (const part of ['Encoded command from Office macro', 'high', '85 %', 'ws-042']) {
      assert.ok(text.includes(part), `the card shows ${part}`);
    }
    await isolate.getByText('Evidence').click();
    await isolate.getByText(/VirusTotal/).waitFor();
    await axe(page, 'review queue');

    let posted = false;
    page.on('request', (r: Request) => {
      if (r.method() === 'POST' && r.url().includes(':approve')) posted = true;
    });
    await isolate.getByRole('button', { name: 'Approve' }).click();
    await isolate.getByRole('alert').filter({ hasText: 'Write a note' }).waitFor();
    assert.equal(posted, false, 'no request without a note');
    await isolate.getByLabel('Note').fill('Confirmed with the customer');
    const approved = page.waitForResponse((r) => r.url().includes(':approve'));
    await isolate.getByRole('button', { name: 'Approve' }).click();
    assert.equal((await approved).status(), 200);
    await isolate.waitFor({ state: 'detached' });

    const close = card('close_case');
    await close.getByLabel('Note').fill('This is real');
    await close.getByLabel('Verdict if rejected (optional)').selectOption('true_positive');
    const rejected = page.waitForResponse((r) => r.url().includes(':reject'));
    await close.getByRole('button', { name: 'Reject' }).click();
    const body = (await (await rejected).json()) as { review: { decision: string } };
    assert.equal(body.review.decision, 'rejected');
    await page.getByText('No reviews are waiting for this tenant.').waitFor();
    w.assertClean();
  });
  const decided = await suite.svc.sql.query<{ action: string; decision: string; note: string }>(
    `SELECT proposed_action AS action, decision, decision_note AS note FROM pending_reviews
     WHERE tenant_id = $1 ORDER BY proposed_action`,
    [tenant.id],
  );
  assert.deepEqual(decided.rows, [
    { action: 'close_case', decision: 'rejected', note: 'This is real' },
    { action: 'isolate_host', decision: 'approved', note: 'Confirmed with the customer' },
  ]);
});

test('issue 14: audit log filters, pages and exports through the API (CSV and JSON Lines)', async () => {
  await signedIn(
    admin,
    async (w) => {
      const { page } = w;
      await open(page, '/audit', 'Audit log');
      await page.locator('table tbody tr').first().waitFor();
      await page.getByLabel('Action').fill('user.create');
      const filtered = page.waitForResponse((r) => r.url().includes('action=user.create'));
      await page.getByRole('button', { name: 'Apply filters' }).click();
      assert.equal((await filtered).status(), 200);
      await page
        .locator('table tbody td:nth-child(4)', { hasNotText: 'user.create' })
        .first()
        .waitFor({ state: 'detached' });
      assert.ok((await page.locator('table tbody tr').count()) >= 4, 'the seeded users');
      for (const [name, type, format] of [
        ['CSV', 'text/csv', 'csv'],
        ['JSON Lines', 'application/x-ndjson', 'jsonl'],
      ] as const) {
        const href = await page.getByRole('link', { name }).getAttribute('href');
        assert.ok(href);
        const url = new URL(href, suite.svc.consoleUrl);
        assert.equal(url.pathname, '/api/mssp/audit');
        assert.equal(url.searchParams.get('format'), format);
        assert.equal(
          url.searchParams.get('action'),
          'user.create',
          'the filters apply to the export',
        );
        const res = await page.request.get(url.href);
        assert.equal(res.status(), 200);
        assert.match(res.headers()['content-type'] ?? '', new RegExp(type));
        const text = await res.text();
        assert.ok(text.includes('user.create') && !text.includes('user.impersonate'));
      }

      await page.getByLabel('Action').fill('Not An Action');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByRole('alert').waitFor();
      assert.equal(await page.getByLabel('Action').getAttribute('aria-invalid'), 'true');
      w.assertClean();
    },
    { expect: [{ path: '/api/mssp/audit', status: 400 }] },
  );
});

test('issue 14: view as customer: the token is sent as Authorization, a permanent banner counts its TTL down', async () => {
  await signedIn(analyst, async (w) => {
    const { page } = w;
    const bearer: string[] = [];
    page.on('request', (r) => {
      const auth = r.headers().authorization;
      if (auth) bearer.push(`${new URL(r.url()).pathname} ${auth.split(' ')[0]}`);
    });
    await open(page, `/tenants/${acme.id}`, 'Acme Shield');
    await page.getByRole('link', { name: 'View as customer' }).click();
    await page.getByRole('heading', { name: 'View Acme Shield as customer' }).waitFor();
    await page.getByLabel('Reason').fill('Customer asked about an incident');
    await page.getByLabel('For').selectOption('15');
    const minted = page.waitForResponse((r) => r.url().includes('/api/mssp/impersonate/'));
    await page.getByRole('button', { name: 'Start viewing as customer' }).click();
    assert.equal((await minted).status(), 200);
    const banner = page.getByRole('region', { name: 'Viewing as customer' });
    await banner.waitFor();
    await page.getByRole('cell', { name: INCIDENT }).waitFor();
    assert.ok(bearer.includes(`/api/mssp/tenants/${acme.id}/incidents Bearer`), bearer.join());
    assert.ok(bearer.includes('/api/mssp/audit Bearer'), 'the audit trail read with the token');
    const first = (await banner.locator('time').textContent()) ?? '';
    assert.match(first, /^1[45]:\d\d$/);
    await page.getByText('user.impersonate').first().waitFor();
    await axe(page, 'view as customer');

    // Permanent: other pages (client-side navigation keeps the in-memory token) show it too.
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Fleet' })
      .click();
    await page.getByRole('heading', { name: 'Fleet', level: 1 }).waitFor();
    await banner.waitFor();
    await page.waitForTimeout(1_200);
    assert.notEqual(await banner.locator('time').textContent(), first, 'it counts down');
    await page.setViewportSize(MOBILE);
    assert.ok(await banner.isVisible(), 'visible at 390 px');

    await banner.getByRole('button', { name: 'End view' }).click();
    await banner.waitFor({ state: 'detached' });
    w.assertClean();
  });
  const { rows } = await suite.svc.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM audit_log WHERE action = 'user.impersonate' AND acting_as = $1`,
    [acme.id],
  );
  assert.ok((rows[0]?.n ?? 0) >= 1, 'the mint is audited for the customer to see');
});

test('issue 14: triage policy editor saves, shows 422 invalid_policy per field, and LLM usage', async () => {
  await signedIn(
    admin,
    async (w) => {
      const { page } = w;
      await open(page, `/tenants/${acme.id}/policy`, 'Triage policy');
      await page.getByText('This tenant runs on the defaults.').waitFor();
      assert.equal(await page.getByLabel('Minimum model confidence').inputValue(), '0.7');
      await page.getByLabel('Minimum model confidence').fill('0.8');
      await page.getByLabel('Custom patterns').fill('ticket=(');
      await page.getByRole('button', { name: 'Save policy' }).click();
      await page.getByRole('alert').waitFor();
      assert.equal(await page.getByLabel('Custom patterns').getAttribute('aria-invalid'), 'true');

      await page.getByLabel('Custom patterns').fill('ticket=TCK-[0-9]+');
      await page.getByLabel('Daily token budget').fill('50000');
      const saved = page.waitForResponse(
        (r) => r.url().endsWith('/triage-policy') && r.request().method() === 'PUT',
      );
      await page.getByRole('button', { name: 'Save policy' }).click();
      assert.equal((await saved).status(), 200);
      await page.getByRole('status').filter({ hasText: 'Policy saved.' }).waitFor();
      await page.getByText('No model calls in the last 30 days.').waitFor();
      await axe(page, 'triage policy');
      w.assertClean();
    },
    { expect: [{ path: `/api/mssp/tenants/${acme.id}/triage-policy`, status: 422 }] },
  );
  const stored = await suite.svc.admin.mssp.getTriagePolicy({ params: { tenant_id: acme.id } });
  assert.equal(stored.status, 200);
  if (stored.status !== 200) return;
  assert.equal(stored.body.policy.min_confidence, 0.8);
  assert.equal(stored.body.policy.daily_budget?.tokens, 50000);
  assert.deepEqual(stored.body.policy.redaction?.custom, [
    { name: 'ticket', pattern: 'TCK-[0-9]+' },
  ]);
});

test('issue 14: every console page, desktop and 390 px: axe clean, no console errors, no page-wide horizontal scroll', async () => {
  const details = [
    `/tenants/${acme.id}`,
    `/tenants/${acme.id}/policy`,
    `/incidents?tenant=${acme.id}`,
    `/reviews?tenant=${acme.id}`,
    `/users?tenant=${acme.id}`,
    `/users/${analyst.id}`,
    `/users/${viewer.id}?tenant=${acme.id}`,
    `/view-as/${acme.id}`,
    '/tenants/new',
  ];
  for (const viewport of [undefined, MOBILE]) {
    await signedIn(
      admin,
      async (w) => {
        const { page } = w;
        const visited = await walkPages(page, suite.svc.consoleUrl);
        for (const path of ['/', '/tenants', '/incidents', '/reviews', '/audit', '/users']) {
          assert.ok(visited.includes(path), `${path} is in the navigation: ${visited.join()}`);
        }
        for (const path of details) {
          await open(page, path);
          await page.waitForLoadState('networkidle');
          await axe(page, `${path} at ${viewport ? 390 : 1280} px`);
          if (viewport) {
            const width = await page
              .locator('html')
              .evaluate((html) => (html as unknown as { scrollWidth: number }).scrollWidth);
            assert.ok(width <= MOBILE.width, `${path} is ${width} px wide at 390 px`);
          }
        }
        await open(page, `/incidents?tenant=${acme.id}`);
        await page.getByRole('cell', { name: INCIDENT }).waitFor();
        w.assertClean(`console walk at ${viewport ? 390 : 1280} px`);
      },
      viewport ? { viewport } : {},
    );
  }
});
