import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { loopbackFetch } from '../../scripts/demo/loopback-fetch.ts';
import { freePort } from '../../src/db/embedded.ts';
import { isRunning } from '../../testcluster/harness.ts';

/**
 * Issue 16 "What to build": `npm run demo` run as a real child process, headless, in its own
 * directory and on a free port (it starts its own cluster, shared with no other test file).
 * What it printed is all the test knows: the console and portal URLs and the credentials;
 * `state.json` lists the processes and ports it started, which must all be gone after Ctrl-C.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES = [
  'sshd: brute force trying to get access to the system. Non existent user.',
  'PAM: User login failed.',
  'Integrity checksum changed.',
  'SQL injection attempt.',
];

interface Login {
  url: string;
  email: string;
  password: string;
}

interface DemoState {
  demoPid: number;
  processes: { name: string; pid: number; binary: string }[];
  ports: number[];
}

interface Demo {
  child: ChildProcess;
  dir: string;
  output(): string;
  exited: Promise<number | null>;
}

function startDemo(args: string[], dir: string): Demo {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'scripts/demo.ts', '--dir', dir, ...args],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, dir, output: () => output, exited };
}

async function waitForOutput(demo: Demo, line: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!line.test(demo.output())) {
    if (demo.child.exitCode !== null) throw new Error(`the demo exited:\n${demo.output()}`);
    if (Date.now() > deadline) throw new Error(`no ${line} in ${timeoutMs} ms:\n${demo.output()}`);
    await sleep(250);
  }
}

/** `  console  <url>  <email> / <password>` and `  portal  …` lines of the ready block. */
function printedLogins(output: string, kind: 'console' | 'portal'): Login[] {
  const pattern = new RegExp(`^ {2}${kind} +(http://\\S+)/ +(\\S+) / (\\S+)`, 'gm');
  return [...output.matchAll(pattern)].map((m) => ({
    url: m[1] ?? '',
    email: m[2] ?? '',
    password: m[3] ?? '',
  }));
}

async function signIn(login: Login): Promise<SvcClient> {
  const client = createSvcClient({
    baseUrl: login.url,
    headers: { origin: login.url },
    fetch: loopbackFetch,
  });
  const res = await client.auth.login({ body: { email: login.email, password: login.password } });
  assert.equal(res.status, 200, `sign-in as ${login.email} at ${login.url}`);
  if (res.status === 200)
    assert.equal(res.body.must_change, false, 'the printed password is final');
  return client;
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(1_000);
  }
}

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
    const customer = await signIn(login);
    const incidents = await eventually(
      `closed and awaiting_review incidents at ${login.url}`,
      async () => {
        const res = await customer.tenant.incidents({ query: { limit: 100 } });
        assert.equal(res.status, 200);
        if (res.status !== 200) return undefined;
        const statuses = new Set(res.body.items.map((i) => i.status));
        return statuses.has('closed') && statuses.has('awaiting_review')
          ? res.body.items
          : undefined;
      },
      180_000,
    );
    for (const incident of incidents) assert.ok(RULES.includes(incident.title), incident.title);
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
