import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import {
  contextOptions,
  launchBrowser,
  seriousViolations,
  type WatchedPage,
  watch,
} from './support.ts';

/**
 * The browser suite's own checks must be able to fail: a page with a console error, a failed
 * request, an unexpected error answer or an unlabelled field is caught. Served by a local
 * HTTP server so the pages are real navigations, not `setContent`.
 */
const PAGES: Record<string, string> = {
  '/noisy': `<!doctype html><html lang="en"><title>noisy</title><body><main><h1>Noisy</h1>
    <script>console.error('boom'); fetch('/api/missing'); fetch('http://127.0.0.1:9/refused').catch(() => {});</script>
    </main></body></html>`,
  '/quiet': `<!doctype html><html lang="en"><title>quiet</title><body><main><h1>Quiet</h1>
    <script>fetch('/api/expected')</script></main></body></html>`,
  '/inaccessible': `<!doctype html><html lang="en"><title>bad</title><body><main><h1>Bad</h1>
    <input type="text"><img src="/pixel.png"></main></body></html>`,
};

let browser: Browser;
let server: Server;
let base: string;

before(async () => {
  server = createServer((req, res) => {
    const page = PAGES[req.url ?? ''];
    if (page) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    } else {
      res.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"status":404}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
});
after(async () => {
  await browser.close();
  await new Promise((resolve) => server.close(resolve));
});

async function visit(path: string, expected: Parameters<typeof watch>[2]): Promise<WatchedPage> {
  const context = await browser.newContext(contextOptions());
  const watched = watch(context, await context.newPage(), expected);
  await watched.page.goto(`${base}${path}`);
  await watched.page.waitForLoadState('networkidle');
  return watched;
}

test('issue 14: the page-walk collector reports console errors, failed requests and error answers', async () => {
  const noisy = await visit('/noisy', []);
  try {
    const problems = noisy.problems();
    assert.ok(
      problems.some((p) => p.includes('console error: boom')),
      problems.join('\n'),
    );
    assert.ok(problems.some((p) => p.startsWith('404 GET') && p.includes('/api/missing')));
    assert.ok(problems.some((p) => p.startsWith('request failed') && p.includes(':9/refused')));
    assert.throws(() => noisy.assertClean());
  } finally {
    await noisy.close();
  }
});

test('issue 14: an answer the protocol gives on purpose is not a page fault', async () => {
  const quiet = await visit('/quiet', [{ path: '/api/expected', status: 404 }]);
  try {
    quiet.assertClean();
  } finally {
    await quiet.close();
  }
});

test('issue 14: the axe scan finds serious violations (unlabelled input, image without alt)', async () => {
  const bad = await visit('/inaccessible', [{ path: '/pixel.png', status: 404 }]);
  try {
    const ids = (await seriousViolations(bad.page)).map((v) => v.id).sort();
    assert.deepEqual(ids, ['image-alt', 'label']);
  } finally {
    await bad.close();
  }
});
