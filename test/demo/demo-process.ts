import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { loopbackFetch } from '../../scripts/demo/loopback-fetch.ts';

/**
 * `scripts/demo.ts` as a real child process, and what a test may know of it: what it printed
 * and its `state.json` (test/demo/demo.test.ts, test/demo/real-node.test.ts).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The titles of the incidents the demo's alerts make (scripts/demo/alerts.ts). */
export const DEMO_RULES = [
  'sshd: brute force trying to get access to the system. Non existent user.',
  'PAM: User login failed.',
  'Integrity checksum changed.',
  'SQL injection attempt.',
];

export interface Login {
  url: string;
  email: string;
  password: string;
}

/** `<dir>/state.json` as scripts/demo.ts writes it. */
export interface DemoState {
  demoPid: number;
  processes: { name: string; pid: number; binary: string }[];
  ports: number[];
  kubeconfigPath?: string;
  realNode?: { name: string; netnsName: string; dir: string };
}

export interface Demo {
  child: ChildProcess;
  dir: string;
  output(): string;
  /** When (Date.now()) the first line matching `line` was printed, if one was. */
  printedAt(line: RegExp): number | undefined;
  exited: Promise<number | null>;
}

export function startDemo(args: string[], dir: string): Demo {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'scripts/demo.ts', '--dir', dir, ...args],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const lines: { at: number; text: string }[] = [];
  let partial = '';
  const take = (d: Buffer) => {
    output += d;
    const parts = (partial + d).split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) lines.push({ at: Date.now(), text });
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    child,
    dir,
    output: () => output,
    printedAt: (line) => lines.find((l) => line.test(l.text))?.at,
    exited,
  };
}

export async function waitForOutput(demo: Demo, line: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!line.test(demo.output())) {
    if (demo.child.exitCode !== null) throw new Error(`the demo exited:\n${demo.output()}`);
    if (Date.now() > deadline) throw new Error(`no ${line} in ${timeoutMs} ms:\n${demo.output()}`);
    await sleep(250);
  }
}

/** `  console  <url>  <email> / <password>` and `  portal  …` lines of the ready block. */
export function printedLogins(output: string, kind: 'console' | 'portal'): Login[] {
  const pattern = new RegExp(`^ {2}${kind} +(http://\\S+)/ +(\\S+) / (\\S+)`, 'gm');
  return [...output.matchAll(pattern)].map((m) => ({
    url: m[1] ?? '',
    email: m[2] ?? '',
    password: m[3] ?? '',
  }));
}

export async function signIn(login: Login): Promise<SvcClient> {
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

export async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(1_000);
  }
}

/**
 * Signs in at a printed portal and waits until the demo's alerts have been triaged both ways:
 * some incidents closed, some awaiting review; every one from a demo rule.
 */
export async function triagedIncidents(login: Login): Promise<void> {
  const customer = await signIn(login);
  const incidents = await eventually(
    `closed and awaiting_review incidents at ${login.url}`,
    async () => {
      const res = await customer.tenant.incidents({ query: { limit: 100 } });
      assert.equal(res.status, 200);
      if (res.status !== 200) return undefined;
      const statuses = new Set(res.body.items.map((i) => i.status));
      return statuses.has('closed') && statuses.has('awaiting_review') ? res.body.items : undefined;
    },
    180_000,
  );
  for (const incident of incidents) assert.ok(DEMO_RULES.includes(incident.title), incident.title);
}

/** SIGINT, then (a demo that does not stop within `graceMs`) a second one: it kills at once. */
export async function stopDemo(demo: Demo, graceMs = 120_000): Promise<void> {
  if (demo.child.exitCode !== null || demo.child.signalCode !== null) return;
  demo.child.kill('SIGINT');
  const late = setTimeout(() => demo.child.kill('SIGINT'), graceMs);
  await demo.exited;
  clearTimeout(late);
}
