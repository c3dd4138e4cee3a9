import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { freePort } from '../../src/db/embedded.ts';
import { isRunning } from '../../testcluster/harness.ts';
import {
  type Demo,
  type DemoState,
  portFree,
  printedLogins,
  signIn,
  startDemo,
  triagedIncidents,
  waitForOutput,
} from './demo-process.ts';

/**
 * Issue 16 "What to build": `npm run demo` run as a real child process, headless, in its own
 * directory and on a free port (it starts its own cluster, shared with no other test file).
 * What it printed is all the test knows: the console and portal URLs and the credentials;
 * `state.json` lists the processes and ports it started, which must all be gone after Ctrl-C.
 */

let demo: Demo;
let port = 0;
let readyAfterMs = 0;

before(async () => {
  port = await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-demo-test-'));
  const started = Date.now();
  // --headless-for only bounds a run whose test died; the test stops it with SIGINT.
  demo = startDemo(['--port', String(port), '--headless-for', '600'], dir);
  await waitForOutput(demo, /^demo: ready$/m, 400_000);
  readyAfterMs = Date.now() - started;
});

after(async () => {
  if (demo.child.exitCode === null && demo.child.signalCode === null) {
    demo.child.kill('SIGINT');
    await demo.exited;
  }
  await rm(demo.dir, { recursive: true, force: true });
});

test('issue 16 `npm run demo` prints each step, the console and portal URLs and the credentials', () => {
  const out = demo.output();
  for (let n = 1; n <= 8; n++) assert.match(out, new RegExp(`^\\[${n}/8\\] `, 'm'));
  assert.deepEqual(
    printedLogins(out, 'console').map((l) => l.url),
    [`http://localhost:${port}`],
  );
  assert.deepEqual(
    printedLogins(out, 'portal').map((l) => l.url),
    [`http://acme.localhost:${port}`, `http://globex.localhost:${port}`],
  );
  console.log(`demo ready after ${(readyAfterMs / 1000).toFixed(1)} s`);
});

test('issue 16 item 3: both demo tenants are active, seen through the MSSP API by the printed staff admin', async () => {
  const [staff] = printedLogins(demo.output(), 'console');
  assert.ok(staff);
  const mssp = await signIn(staff);
  const res = await mssp.mssp.listTenants({ query: {} });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(res.body.items.map((t) => [t.slug, t.state]).sort(), [
    ['acme', 'active'],
    ['globex', 'active'],
  ]);
});

test("issue 16: alerts reach each portal's incident list, and triage both closes and queues reviews", {
  timeout: 240_000,
}, async () => {
  const portals = printedLogins(demo.output(), 'portal');
  assert.equal(portals.length, 2);
  for (const login of portals) {
    await triagedIncidents(login);
  }
  const [staff] = printedLogins(demo.output(), 'console');
  assert.ok(staff);
  const reviews = await (await signIn(staff)).mssp.allReviews();
  assert.equal(reviews.status, 200);
  if (reviews.status !== 200) return;
  assert.deepEqual([...new Set(reviews.body.items.map((r) => r.tenant_slug))].sort(), [
    'acme',
    'globex',
  ]);
});

test('issue 16: Ctrl-C (SIGINT) stops every process the demo started and frees its ports', {
  timeout: 120_000,
}, async () => {
  const state = JSON.parse(await readFile(path.join(demo.dir, 'state.json'), 'utf8')) as DemoState;
  assert.deepEqual(state.processes.map((p) => p.name).sort(), [
    'adapter acme',
    'adapter globex',
    'etcd',
    'indexer acme',
    'indexer globex',
    'kube-apiserver',
    'kube-controller-manager',
    'kube-scheduler',
    'kwok',
    'postgres',
    'svc serve',
  ]);
  assert.ok(state.processes.every(isRunning), 'all of them run before Ctrl-C');
  const stoppingFrom = Date.now();
  demo.child.kill('SIGINT');
  assert.equal(await demo.exited, 0, demo.output());
  console.log(`demo stopped in ${((Date.now() - stoppingFrom) / 1000).toFixed(1)} s`);
  assert.match(demo.output(), /^demo: stopped; nothing it started is running$/m);
  assert.deepEqual(state.processes.filter(isRunning), []);
  assert.ok(state.ports.includes(port));
  for (const p of state.ports) assert.ok(await portFree(p), `port ${p} is free`);
  assert.equal(existsSync(demo.dir), false, 'its files are removed (no --keep-data)');
});

test('issue 16: a bad flag exits 2 with a one-line hint and starts nothing', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-demo-flag-'));
  try {
    const bad = startDemo(['--port', 'eighty'], dir);
    assert.equal(await bad.exited, 2);
    assert.match(bad.output(), /^--port: expected a port number 1-65535\nusage: npm run demo -- /);
    assert.equal(existsSync(path.join(dir, 'state.json')), false);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
