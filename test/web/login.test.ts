import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  axe,
  loginForm,
  MOBILE,
  type SeededUser,
  seedUser,
  signIn,
  type WatchedPage,
  webSuite,
} from './support.ts';

/** Spec §5.9.1, §5.9.2, §5.9.7 (first load, /login when signed in) and §5.9.8 on the console. */
let analyst: SeededUser;
const suite = webSuite(async (svc) => {
  analyst = await seedUser(svc, { role: 'analyst' });
});

const INCORRECT = 'Email or password is incorrect.';
const HINT = "Contact your administrator if you've lost access.";
/** A wrong password is a 401 by design (docs/auth.md); the page must not treat it as a fault. */
const LOGIN_401 = { path: '/api/auth/login', status: 401 } as const;
/** The SPA's first question on a fresh page is who is signed in: nobody is a 401. */
const ME_401 = { path: '/api/auth/me', status: 401 } as const;

async function withPage<T>(
  fn: (w: WatchedPage) => Promise<T>,
  options: Parameters<typeof suite.open>[0] = {},
): Promise<T> {
  const w = await suite.open({ ...options, expect: [ME_401, ...(options.expect ?? [])] });
  try {
    return await fn(w);
  } finally {
    await w.close();
  }
}

async function submitAndRead(w: WatchedPage, email: string, password: string): Promise<string> {
  const form = loginForm(w.page);
  await form.email.fill(email);
  await form.password.fill(password);
  const answered = w.page.waitForResponse((r) => r.url().endsWith('/api/auth/login'));
  await form.submit.click();
  await answered;
  const alert = w.page.getByRole('alert');
  await alert.waitFor();
  return (await alert.textContent())?.trim() ?? '';
}

test('§5.9.1 /login has labelled email and password, one button "Sign in.", focus on email, Enter submits', async () => {
  await withPage(async (w) => {
    const { page } = w;
    await page.goto(`${suite.svc.consoleUrl}/login`);
    const form = loginForm(page);
    assert.equal(await form.email.getAttribute('type'), 'email');
    assert.equal(await form.password.getAttribute('type'), 'password');
    assert.equal(await page.getByRole('button').count(), 1, 'one button on the sign-in page');
    assert.equal((await form.submit.textContent())?.trim(), 'Sign in.');
    assert.equal(await page.evaluate(focusedName), 'input:email', 'initial focus on email');
    await axe(page, '/login');
    // Enter in the password field submits; no click anywhere.
    await page.keyboard.type(analyst.email);
    await form.password.fill(analyst.password);
    await form.password.press('Enter');
    await page.waitForURL((url) => url.pathname !== '/login');
    w.assertClean();
  });
});

test('§5.9.1 the MSSP console /login shows the install branding from the public lookup', async () => {
  const res = await fetch(`${suite.svc.consoleUrl}/api/public/branding`);
  const branding = (await res.json()) as { app_name: string };
  await withPage(async (w) => {
    await w.page.goto(`${suite.svc.consoleUrl}/login`);
    await w.page.getByText(branding.app_name, { exact: true }).first().waitFor();
    w.assertClean();
  });
});

test('§5.9.2 a wrong password and an unknown email read the same: "Email or password is incorrect."', async () => {
  await withPage(
    async (w) => {
      await w.page.goto(`${suite.svc.consoleUrl}/login`);
      const wrong = await submitAndRead(w, analyst.email, 'not the password at all');
      const unknown = await submitAndRead(w, 'nobody-here@web.test', 'not the password at all');
      assert.equal(wrong, INCORRECT);
      assert.equal(unknown, INCORRECT);
      assert.equal(w.page.url(), `${suite.svc.consoleUrl}/login`, 'still on /login');
      await axe(w.page, '/login with an error');
      w.assertClean();
    },
    { expect: [LOGIN_401] },
  );
});

test('§5.9.2 ten failures lock the account: "This account is temporarily locked. Try again at {unlock_time}."', async () => {
  const victim = await seedUser(suite.svc, { role: 'analyst' });
  await withPage(
    async (w) => {
      await w.page.goto(`${suite.svc.consoleUrl}/login`);
      for (let i = 1; i < 10; i++) {
        assert.equal(await submitAndRead(w, victim.email, `wrong guess ${i} of ten`), INCORRECT);
      }
      const locked = w.page.waitForResponse((r) => r.url().endsWith('/api/auth/login'));
      const message = await submitAndRead(w, victim.email, 'wrong guess 10 of ten');
      const answer = await locked;
      assert.equal(answer.status(), 423);
      const { unlock_at } = (await answer.json()) as { unlock_at: string };
      const match = /^This account is temporarily locked\. Try again at (.+)\.$/.exec(message);
      assert.ok(match?.[1], message);
      assert.ok(
        shownTimes(new Date(unlock_at)).some((t) => match[1]?.includes(t)),
        `"${match[1]}" names ${unlock_at} (UTC page)`,
      );
      // The right password does not get through a lock, and the message stays the lock's.
      const again = await submitAndRead(w, victim.email, victim.password);
      assert.match(again, /^This account is temporarily locked\. Try again at .+\.$/);
      w.assertClean();
    },
    { expect: [LOGIN_401, { path: '/api/auth/login', status: 423 }] },
  );
});

/** The unlock time as a page in UTC/en-US may write it: 12- or 24-hour clock. */
function shownTimes(at: Date): string[] {
  const base = { hour: 'numeric', minute: '2-digit', timeZone: 'UTC' } as const;
  return [
    new Intl.DateTimeFormat('en-US', { ...base, hour12: true }).format(at),
    new Intl.DateTimeFormat('en-US', { ...base, hour12: false }).format(at),
    at.toISOString().slice(11, 16),
  ];
}

test('§5.9.2 a server error shows "Something went wrong. Try again."', async () => {
  await withPage(
    async (w) => {
      await w.page.route('**/api/auth/login', (route) =>
        route.fulfill({
          status: 500,
          contentType: 'application/problem+json',
          body: JSON.stringify({
            type: 'urn:svc:problem:internal',
            title: 'Internal Server Error',
            status: 500,
            code: 'internal',
          }),
        }),
      );
      await w.page.goto(`${suite.svc.consoleUrl}/login`);
      assert.equal(
        await submitAndRead(w, analyst.email, analyst.password),
        'Something went wrong. Try again.',
      );
      w.assertClean();
    },
    { expect: [{ path: '/api/auth/login', status: 500 }] },
  );
});

test('§5.9.2 a network error keeps the form and shows "Couldn\'t reach the server. Check your connection and try again."', async () => {
  await withPage(
    async (w) => {
      await w.page.route('**/api/auth/login', (route) => route.abort('internetdisconnected'));
      await w.page.goto(`${suite.svc.consoleUrl}/login`);
      const form = loginForm(w.page);
      await form.email.fill(analyst.email);
      await form.password.fill(analyst.password);
      await form.submit.click();
      const alert = w.page.getByRole('alert');
      await alert.waitFor();
      assert.equal(
        (await alert.textContent())?.trim(),
        "Couldn't reach the server. Check your connection and try again.",
      );
      assert.equal(await form.email.inputValue(), analyst.email, 'email kept');
      assert.equal(await form.password.inputValue(), analyst.password, 'password kept');
      // The connection is back: the same form, submitted again, signs in.
      await w.page.unroute('**/api/auth/login');
      await form.submit.click();
      await w.page.waitForURL((url) => url.pathname !== '/login');
      w.assertClean();
    },
    { expect: [{ path: '/api/auth/login', status: 'failed' }] },
  );
});

test('§5.9.2 the hint line "Contact your administrator if you\'ve lost access." and no self-service reset link', async () => {
  await withPage(async (w) => {
    await w.page.goto(`${suite.svc.consoleUrl}/login`);
    await w.page.getByText(HINT, { exact: true }).waitFor();
    assert.equal(await w.page.getByRole('link', { name: /forgot|reset|recover/i }).count(), 0);
    w.assertClean();
  });
});

test('§5.9.8 labelled inputs, errors with role=alert, natural focus order, no CAPTCHA, 44x44 px "Sign in." at 390 px', async () => {
  await withPage(
    async (w) => {
      const { page } = w;
      await page.goto(`${suite.svc.consoleUrl}/login`);
      const form = loginForm(page);
      await form.email.waitFor();
      // Natural order: email, password, then the button, each reached by one Tab.
      const order: string[] = [];
      for (let i = 0; i < 3; i++) {
        order.push(await page.evaluate(focusedName));
        await page.keyboard.press('Tab');
      }
      assert.deepEqual(order, ['input:email', 'input:password', 'button:Sign in.']);
      assert.equal(await page.locator('iframe').count(), 0, 'no third-party widget (CAPTCHA)');
      assert.doesNotMatch(await page.content(), /captcha/i);
      const box = await form.submit.boundingBox();
      assert.ok(box && box.width >= 44 && box.height >= 44, `button box ${JSON.stringify(box)}`);
      assert.equal(await submitAndRead(w, analyst.email, 'a wrong one for the alert'), INCORRECT);
      await axe(page, '/login at 390 px with an error');
      w.assertClean();
    },
    { viewport: MOBILE, expect: [LOGIN_401] },
  );
});

/** Runs in the page: what has focus, as `tag:type-or-name`. */
function focusedName(): string {
  const el = (
    globalThis as unknown as {
      document: {
        activeElement: { tagName: string; type?: string; textContent: string | null } | null;
      };
    }
  ).document.activeElement;
  if (!el) return 'none';
  const tag = el.tagName.toLowerCase();
  return tag === 'input' ? `input:${el.type}` : `${tag}:${(el.textContent ?? '').trim()}`;
}

test('§5.9.7 an unauthenticated first load goes to /login without flash', async () => {
  await withPage(async (w) => {
    const { page } = w;
    // Everything the app ever rendered, to prove no protected page showed before the redirect.
    await page.addInitScript(() => {
      const g = globalThis as unknown as {
        __seen: string[];
        document: { documentElement: { textContent: string } };
        MutationObserver: new (cb: () => void) => { observe(n: unknown, o: unknown): void };
      };
      g.__seen = [];
      new g.MutationObserver(() => g.__seen.push(g.document.documentElement.textContent)).observe(
        g.document,
        { childList: true, subtree: true, characterData: true },
      );
    });
    await page.goto(`${suite.svc.consoleUrl}/tenants`);
    await loginForm(page).email.waitFor();
    assert.equal(new URL(page.url()).pathname, '/login');
    assert.equal(new URL(page.url()).searchParams.get('expired'), null, 'not an expiry');
    const seen = await page.evaluate(() => (globalThis as unknown as { __seen: string[] }).__seen);
    for (const text of seen) {
      assert.doesNotMatch(text, /Sign out|Your session expired|You have been signed out/);
    }
    assert.equal(await page.getByRole('alert').count(), 0, 'no message on a first visit');
    w.assertClean();
  });
});

test('§5.9.7 an authenticated visit to /login goes to the landing route', async () => {
  await withPage(async (w) => {
    await signIn(w.page, suite.svc.consoleUrl, analyst);
    const landing = new URL(w.page.url()).pathname;
    await w.page.goto(`${suite.svc.consoleUrl}/login`);
    await w.page.waitForURL((url) => url.pathname !== '/login');
    assert.equal(new URL(w.page.url()).pathname, landing);
    w.assertClean();
  });
});
