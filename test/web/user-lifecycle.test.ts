import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { ROLE_LABELS } from '../../web/shared/texts.ts';
import {
  axe,
  type Expected,
  type SeededUser,
  seedUser,
  signIn,
  type WatchedPage,
  webSuite,
} from './support.ts';

/**
 * Issue 15 "MSSP user lifecycle" in the console: a platform_admin disables, enables and
 * re-roles MSSP users from the user's page; nobody else is offered it, nor for themselves.
 */
let admin: SeededUser;
let msspAdmin: SeededUser;

const suite = webSuite(async (svc) => {
  admin = await seedUser(svc, { role: 'platform_admin' });
  msspAdmin = await seedUser(svc, { role: 'mssp_admin' });
});

const ME_401: Expected = { path: '/api/auth/me', status: 401 };

async function signedIn(user: SeededUser, fn: (w: WatchedPage) => Promise<void>): Promise<void> {
  const w = await suite.open({ expect: [ME_401] });
  try {
    await signIn(w.page, suite.svc.consoleUrl, user);
    await w.page.getByRole('heading', { level: 1 }).first().waitFor();
    await fn(w);
  } finally {
    await w.close();
  }
}

async function open(page: Page, user: SeededUser): Promise<void> {
  await page.goto(`${suite.svc.consoleUrl}/users/${user.id}`);
  await page.getByRole('heading', { level: 1 }).filter({ hasText: user.email }).waitFor();
}

const status = (page: Page) => page.locator('dd').nth(2);

test('issue 15 a platform_admin disables, enables and re-roles an MSSP user from its page', async () => {
  const target = await seedUser(suite.svc, { role: 'analyst' });
  await signedIn(admin, async (w) => {
    const { page } = w;
    await open(page, target);
    await page.getByRole('button', { name: 'Disable' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('heading', { name: `Disable ${target.email}?` }).waitFor();
    await axe(page, 'disable confirmation');
    const disabled = page.waitForResponse((r) => r.url().endsWith(':disable'));
    await dialog.getByRole('button', { name: 'Disable' }).click();
    assert.equal((await disabled).status(), 200);
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    assert.match((await status(page).textContent()) ?? '', /^deactivated/);

    const enabled = page.waitForResponse((r) => r.url().endsWith(':enable'));
    await page.getByRole('button', { name: 'Enable' }).click();
    assert.equal((await enabled).status(), 200);
    await page.getByRole('button', { name: 'Disable' }).waitFor();
    assert.equal(await status(page).textContent(), 'active');

    const changed = page.waitForResponse((r) => r.request().method() === 'PATCH');
    await page.getByLabel(/^Role/).selectOption('mssp_admin');
    assert.equal((await changed).status(), 200);
    await page.locator('dd', { hasText: ROLE_LABELS.mssp_admin }).waitFor();
    await axe(page, 'MSSP user page with lifecycle actions');
    w.assertClean();
  });
  const { rows } = await suite.svc.sql.query<{ role: string; disabled_at: Date | null }>(
    'SELECT role, disabled_at FROM users WHERE id = $1',
    [target.id],
  );
  assert.deepEqual(rows, [{ role: 'mssp_admin', disabled_at: null }]);
});

test('issue 15 the lifecycle actions are offered to no one else, and never for oneself', async () => {
  const analyst = await seedUser(suite.svc, { role: 'analyst' });
  const noActions = async (page: Page, label: string) => {
    assert.equal(await page.getByRole('button', { name: 'Disable' }).count(), 0, label);
    assert.equal(await page.getByLabel(/^Role/).count(), 0, label);
  };
  await signedIn(admin, async (w) => {
    await open(w.page, admin);
    await noActions(w.page, 'platform_admin on itself (409 cannot_disable_self)');
    w.assertClean();
  });
  await signedIn(msspAdmin, async (w) => {
    await open(w.page, analyst);
    await noActions(w.page, 'mssp_admin: spec §5.8 R + invite only');
    w.assertClean();
  });
});
