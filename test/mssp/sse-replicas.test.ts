import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/db/embedded.ts';
import { appendUncheckedEvent } from '../../src/domains/events/index.ts';
import { seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, externalDatabaseEnv, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

interface Replica {
  url: string;
}

let db: TestDatabase;
let inProcess: TestApi;
let child: ChildProcess | undefined;
let childDataDir: string;
let replicas: Replica[];
let tenantA: string;
let tenantB: string;
let cookie: string;

before(async () => {
  db = await createTestDatabase();
  // Two API processes over one database, each with its own LISTEN connection: this test
  // process, and a real `svc serve` started as a separate OS process.
  inProcess = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  replicas = [inProcess, await startServeProcess()];
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  const first = inProcess;
  await seedUser(db, first.hasher, {
    email: 'an@mssp.test',
    role: 'analyst',
    password: 'correct horse battery',
  });
  const login = await fetch(`${first.url}/api/auth/login`, {
    method: 'POST',
    headers: { origin: first.origin, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'an@mssp.test', password: 'correct horse battery' }),
  });
  cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
});
after(async () => {
  if (child?.pid && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    process.kill(-child.pid, 'SIGTERM');
    await exited;
  }
  await inProcess.close();
  await db.drop();
  await rm(childDataDir, { recursive: true, force: true });
});

/** `svc serve` as its own process, pointed at this file's database as an external one. */
async function startServeProcess(): Promise<Replica> {
  const port = await freePort();
  childDataDir = await mkdtemp(path.join(tmpdir(), 'svc-replica-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_PORT: String(port),
    SVC_DATA_DIR: childDataDir,
    SVC_LOG_LEVEL: 'warn',
    ...externalDatabaseEnv(db.target),
  };
  delete env.KUBECONFIG;
  const root = fileURLToPath(new URL('../../', import.meta.url));
  // The same Node as this test (24), whatever `node` on PATH is.
  child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) throw new Error(`svc serve exited: ${stderr}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { url };
    await sleep(250);
  }
  throw new Error(`svc serve did not become healthy: ${stderr}`);
}

/** Reads an SSE response until `until` has been seen (or 10 s pass), then hangs up. */
async function collect(api: Replica, tenantId: string, until: string, lastEventId?: string) {
  const controller = new AbortController();
  const res = await fetch(`${api.url}/api/mssp/tenants/${tenantId}/events`, {
    headers: { cookie, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  const reader = res.body?.getReader();
  assert.ok(reader);
  let text = '';
  const done = (async () => {
    const deadline = Date.now() + 10_000;
    while (!text.includes(until) && Date.now() < deadline) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    controller.abort();
    return text;
  })();
  return { done };
}

function append(tenantId: string, type: string) {
  return db.app.withTenant(tenantId, (tx) =>
    appendUncheckedEvent(tx, {
      tenantId,
      streamType: 'investigation',
      streamId: randomUUID(),
      streamSeq: 1,
      type,
    }),
  );
}

/** Event ids of the SSE blocks in `text` whose event type is `type` ('*' for all). */
function ids(text: string, type: string): string[] {
  return text
    .split('\n\n')
    .map((block) => ({
      event: /^event: (.+)$/m.exec(block)?.[1],
      id: /^id: (\d+)$/m.exec(block)?.[1],
    }))
    .filter((b) => b.id !== undefined && (type === '*' || b.event === type))
    .map((b) => b.id ?? '');
}

test("§9.5.5 event-stream isolation across two API processes: B's mutation reaches no A subscriber on either", async () => {
  const [one, two] = replicas;
  assert.ok(one && two);
  const onOne = await collect(one, tenantA, 'alpha.done');
  const onTwo = await collect(two, tenantA, 'alpha.done');
  await new Promise((resolve) => setTimeout(resolve, 300));
  await append(tenantB, 'bravo.secret');
  await append(tenantA, 'alpha.first');
  await append(tenantB, 'bravo.secret');
  await append(tenantA, 'alpha.done');
  for (const text of [await onOne.done, await onTwo.done]) {
    assert.match(text, /event: alpha\.first[\s\S]*event: alpha\.done/);
    assert.doesNotMatch(text, /bravo/);
  }
});

test('§6.2 resuming with Last-Event-ID on the other process loses nothing and repeats nothing', async () => {
  const [one, two] = replicas;
  assert.ok(one && two);
  const live = await collect(one, tenantA, 'resume.3');
  await new Promise((resolve) => setTimeout(resolve, 300));
  await append(tenantA, 'resume.1');
  await append(tenantA, 'resume.2');
  await append(tenantA, 'resume.3');
  const seen = await live.done;
  const first = ids(seen, 'resume.1')[0];
  assert.ok(first, seen);
  const resumed = await (await collect(two, tenantA, 'resume.3', first)).done;
  assert.deepEqual(
    ids(resumed, '*').filter((id) => ids(seen, '*').includes(id)),
    [...ids(seen, 'resume.2'), ...ids(seen, 'resume.3')],
  );
  assert.doesNotMatch(resumed, /event: resume\.1\n/);
});
