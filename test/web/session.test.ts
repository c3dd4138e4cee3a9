import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSvcClient } from '../../contracts/index.ts';
import {
  MUST_CHANGE_BANNER,
  PASSWORD_CHANGED,
  PASSWORD_TOO_SHORT,
  PASSWORD_TOO_WEAK,
  ROLE_LABELS,
} from '../../web/shared/texts.ts';
import {
  axe,
  loginForm,
  type SeededUser,
  seedUser,
  signIn,
  USER_PASSWORD,
  type WatchedPage,
  webSuite,
} from './support.ts';

/** Spec §5.9.3, §5.9.4, §5.9.5 and §5.9.7 (expiry mid-use, `next`) on the MSSP console. */
const suite = webSuite();

const ME_401 = { path: '/api/auth/me', status: 401 } as const;

async function withPage<T>(
  fn: (w: WatchedPage) => Promise<T>,
  expect: Parameters<typeof suite.open>[0] = {},
): Promise<T> {
  const w = await suite.open({ ...expect, expect: [ME_401, ...(expect.expect ?? [])] });
  try {
    return await fn(w);
  } finally {
    await w.close();
  }
}

function passwordForm(w: WatchedPage) {
  return {
    current: w.page.getByLabel('Current password', { exact: true }),
    next: w.page.getByLabel('New password', { exact: true }),
    confirm: w.page.getByLabel('Confirm new password', { exact: true }),
    submit: w.page.getByRole('button', { name: 'Change password' }),
  };
}

function path(w: WatchedPage): string {
  return new URL(w.page.url()).pathname;
}

/** A second device: the SDK signed in as the same user. */
async function otherDevice({ email, password }: SeededUser) {
  const client = createSvcClient({
    baseUrl: suite.svc.consoleUrl,
    headers: { origin: suite.svc.consoleUrl },
  });
  assert.equal((await client.auth.login({ body: { email, password } })).status, 200);
  return client;
}

test('§5.9.3 a must_change sign-in goes straight to /account/password; any other route comes back there with the banner', async () => {
  const user = await seedUser(suite.svc, { role: 'analyst', mustChange: true });
  await withPage(async (w) => {
    await signIn(w.page, suite.svc.consoleUrl, user);
    assert.equal(path(w), '/account/password');
    await w.page.getByText(MUST_CHANGE_BANNER, { exact: true }).waitFor();
    for (const elsewhere of ['/tenants', '/no-such-page']) {
      await w.page.goto(`${suite.svc.consoleUrl}${elsewhere}`);
      await w.page.getByText(MUST_CHANGE_BANNER, { exact: true }).waitFor();
      assert.equal(path(w), '/account/password', `${elsewhere} comes back`);
    }
    await axe(w.page, '/account/password with the banner');
    const form = passwordForm(w);
    await form.current.fill(user.password);
    await form.next.fill(USER_PASSWORD);
    await form.confirm.fill(USER_PASSWORD);
    await form.submit.click();
    await w.page.getByText(PASSWORD_CHANGED, { exact: true }).waitFor();
    assert.equal(await w.page.getByText(MUST_CHANGE_BANNER).count(), 0, 'banner gone');
    await w.page.getByRole('link', { name: 'Continue' }).click();
    await w.page.getByRole('navigation', { name: 'Main' }).waitFor();
    assert.equal(path(w), '/', 'the landing route opens once the password is changed');
    w.assertClean();
  });
});

test('§5.9.4 /account/password: current, new, confirm; only the length-12 rule is checked inline; success signs other devices out and keeps this one', async () => {
  const user = await seedUser(suite.svc, { role: 'analyst' });
  const other = await otherDevice(user);
  await withPage(
    async (w) => {
      await signIn(w.page, suite.svc.consoleUrl, user);
      await w.page.goto(`${suite.svc.consoleUrl}/account/password`);
      const form = passwordForm(w);
      const rule = w.page.getByText(PASSWORD_TOO_SHORT, { exact: true });
      await form.next.fill('eleven char');
      await rule.waitFor();
      assert.equal(await form.next.getAttribute('aria-invalid'), 'true');
      await axe(w.page, '/account/password with the inline check');
      await form.next.fill('twelve chars');
      await rule.waitFor({ state: 'detached' });
      // A common password passes the inline check: the server judges everything else.
      await form.current.fill(user.password);
      await form.next.fill('1qaz2wsx3edc');
      assert.equal(await w.page.getByRole('alert').count(), 0, 'nothing but length inline');
      await form.confirm.fill('1qaz2wsx3edc');
      await form.submit.click();
      const refused = w.page.getByRole('alert');
      await refused.waitFor();
      assert.equal((await refused.textContent())?.trim(), PASSWORD_TOO_WEAK);

      const chosen = 'a brand new browser passphrase';
      await form.next.fill(chosen);
      await form.confirm.fill(chosen);
      await form.submit.click();
      await w.page.getByText(PASSWORD_CHANGED, { exact: true }).waitFor();
      assert.match(PASSWORD_CHANGED, /other devices were signed out/i);
      assert.equal((await other.auth.me()).status, 401, 'the other device is signed out');
      await w.page.reload();
      await w.page.getByRole('heading', { name: 'Change password', level: 1 }).waitFor();
      assert.equal(path(w), '/account/password', 'this device stays signed in');
      await otherDevice({ ...user, password: chosen }); // the new password signs in
      w.assertClean();
    },
    { expect: [{ path: '/api/auth/password/change', status: 400 }] },
  );
});

test('§5.9.5 account menu: email, role label, change password link, "Sign out" goes to /login with "You have been signed out."', async () => {
  const user = await seedUser(suite.svc, { role: 'analyst' });
  await withPage(async (w) => {
    await signIn(w.page, suite.svc.consoleUrl, user);
    const menu = w.page.getByRole('button', { name: user.email });
    await menu.click();
    const panel = w.page.locator(`#${await menu.getAttribute('aria-controls')}`);
    await panel.getByText(user.email, { exact: true }).waitFor();
    await panel.getByText(ROLE_LABELS.analyst, { exact: true }).waitFor();
    await axe(w.page, 'the account menu, open');
    await panel.getByRole('link', { name: 'Change password' }).click();
    await w.page.waitForURL(`${suite.svc.consoleUrl}/account/password`);
    await menu.click();
    const cookieBefore = (await w.context.cookies()).find((c) => c.name === 'svc_session');
    assert.ok(cookieBefore, 'signed in with a session cookie');
    const logout = w.page.waitForResponse((r) => r.url().endsWith('/api/auth/logout'));
    await panel.getByRole('button', { name: 'Sign out' }).click();
    assert.equal((await logout).request().method(), 'POST');
    await w.page.waitForURL(`${suite.svc.consoleUrl}/login`);
    await w.page.getByText('You have been signed out.', { exact: true }).waitFor();
    // The session is over on the server too, not only forgotten by the page.
    const replay = await fetch(`${suite.svc.consoleUrl}/api/auth/me`, {
      headers: { cookie: `svc_session=${cookieBefore.value}` },
    });
    assert.equal(replay.status, 401);
    // A flash, not a state: a reload of /login does not repeat it.
    await w.page.reload();
    await loginForm(w.page).email.waitFor();
    assert.equal(await w.page.getByText('You have been signed out.').count(), 0);
    w.assertClean();
  });
});

test('§5.9.7 a 401 mid-use goes to /login?expired=1&next=<url> with "Your session expired. Please sign in again." and back after sign-in', async () => {
  const user = await seedUser(suite.svc, { role: 'analyst' });
  await withPage(
    async (w) => {
      await signIn(w.page, suite.svc.consoleUrl, user);
      // Another page than the landing one, so coming back is not landing by default.
      const elsewhere = w.page.locator('nav[aria-label="Main"] a:not([href="/"])').first();
      const target = await elsewhere.getAttribute('href');
      // The idle deadline passes (absolute and idle expiry read the same to the page).
      await suite.svc.sql.query(
        `UPDATE sessions SET idle_expiry = now() - interval '1 second'
          WHERE user_id = $1 AND revoked_at IS NULL`,
        [user.id],
      );
      await elsewhere.click();
      await w.page.waitForURL((url) => url.pathname === '/login');
      const url = new URL(w.page.url());
      assert.equal(url.searchParams.get('expired'), '1');
      const next = url.searchParams.get('next');
      assert.equal(next, target);
      await w.page
        .getByText('Your session expired. Please sign in again.', { exact: true })
        .waitFor();
      await axe(w.page, '/login?expired=1');
      const form = loginForm(w.page);
      await form.email.fill(user.email);
      await form.password.fill(user.password);
      await form.submit.click();
      await w.page.waitForURL((u) => u.pathname !== '/login');
      assert.equal(`${new URL(w.page.url()).pathname}${new URL(w.page.url()).search}`, next);
      w.assertClean();
    },
    { expect: [{ path: /^\/api\//, status: 401 }] },
  );
});

test('§5.9.7 after sign-in `next` is followed only when same-origin, otherwise the landing route', async () => {
  const user = await seedUser(suite.svc, { role: 'analyst' });
  await withPage(async (w) => {
    const signInWith = async (next: string) => {
      // The previous landing page's reads finish first: one still in flight when the cookie
      // goes would meet a 401 the walk counts against the page.
      await w.page.waitForLoadState('networkidle');
      await w.context.clearCookies();
      await signIn(w.page, suite.svc.consoleUrl, user, `/login?next=${encodeURIComponent(next)}`);
      return new URL(w.page.url());
    };
    for (const foreign of [
      'https://evil.example/steal',
      '//evil.example/steal',
      '/\\evil.example/steal',
    ]) {
      const landed = await signInWith(foreign);
      assert.equal(landed.origin, suite.svc.consoleUrl, foreign);
      assert.equal(landed.pathname, '/', `${foreign} is not followed: the landing route`);
    }
    assert.equal((await signInWith('/audit')).pathname, '/audit', 'a path of this origin is');
    w.assertClean();
  });
});
