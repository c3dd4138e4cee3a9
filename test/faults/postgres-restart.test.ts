import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createPasswordHasher } from '../../src/auth/passwords.ts';
import { bootstrapDatabase } from '../../src/db/bootstrap.ts';
import { loadOrCreateCredentials } from '../../src/db/credentials.ts';
import { type EmbeddedServer, freePort, startEmbedded } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { clientConfig, type DatabaseTarget } from '../../src/db/target.ts';
import type { TenantTx } from '../../src/db/tenant-context.ts';
import { appendUncheckedEvent } from '../../src/domains/events/index.ts';
import { setPassword } from '../../src/domains/users/user-repository.ts';
import { createLogger } from '../../src/log/index.ts';
import { externalDatabaseEnv } from '../support/database.ts';

/*
 * Issue 10 "Fault tolerance under load": a real `svc serve` process on a PostgreSQL server
 * private to this file (the run's shared server is never restarted), driven by sign-ins,
 * reads, an SSE client and audited mutations while PostgreSQL restarts twice: once at once
 * (backends die mid-query with 57P01 admin_shutdown) and once with a pause (connections are
 * refused while it is down).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ORIGIN = 'https://mssp.test';
const EMAIL = 'admin@mssp.test';
const PASSWORD = 'correct horse battery staple';
const silent = createLogger('silent');

let pgDir: string;
let svcDir: string;
let server: EmbeddedServer;
let target: DatabaseTarget;
let superuser: pg.ClientConfig;
let child: ChildProcess;
let stderr = '';
let url: string;
let tenantId: string;

before(async () => {
  pgDir = await mkdtemp(path.join(tmpdir(), 'svc-fault-pg-'));
  svcDir = await mkdtemp(path.join(tmpdir(), 'svc-fault-svc-'));
  server = await startEmbedded(pgDir, silent);
  const credentials = await loadOrCreateCredentials(pgDir);
  superuser = { host: server.host, port: server.port, ...server.superuser, database: 'svc' };
  await bootstrapDatabase({ ...superuser, database: 'postgres' }, 'svc', credentials);
  target = { host: server.host, port: server.port, database: 'svc', ssl: false, credentials };
  await migrate(clientConfig(target, 'admin'));
  await seed();
  await startServe();
});

after(async () => {
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid, 'SIGTERM');
    await exited;
  }
  await server?.stop();
  await rm(pgDir, { recursive: true, force: true });
  await rm(svcDir, { recursive: true, force: true });
});

/** One tenant and a platform_admin with a current password, written as superuser. */
async function seed(): Promise<void> {
  const hasher = createPasswordHasher({ concurrency: 1, queue: 1 });
  const hash = await hasher.hash(PASSWORD);
  const client = new pg.Client(superuser);
  await client.connect();
  try {
    await client.query('BEGIN');
    const tenant = await client.query<{ id: string }>(
      `INSERT INTO tenants (slug, display_name) VALUES ('fault', 'Fault') RETURNING id`,
    );
    tenantId = tenant.rows[0]?.id ?? '';
    const user = await client.query<{ id: string }>(
      `INSERT INTO users (email, role) VALUES ($1, 'platform_admin') RETURNING id`,
      [EMAIL],
    );
    await setPassword(client as pg.PoolClient, user.rows[0]?.id ?? '', hash, false, new Date());
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}

async function startServe(): Promise<void> {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_PORT: String(port),
    SVC_DATA_DIR: svcDir,
    SVC_LOG_LEVEL: 'warn',
    SVC_MSSP_HOSTNAME: 'mssp.test',
    // The sign-in loop is load, not an attack.
    SVC_LOGIN_RATE_LIMIT_IP: '100000',
    SVC_LOGIN_RATE_LIMIT_EMAIL: '100000',
    ...externalDatabaseEnv(target),
  };
  delete env.KUBECONFIG;
  child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) throw new Error(`svc serve exited: ${stderr}`);
    if (await healthy()) return;
    await sleep(250);
  }
  throw new Error(`svc serve did not become healthy: ${stderr}`);
}

function healthy(): Promise<boolean> {
  return fetch(`${url}/healthz`).then(
    (r) => r.status === 200,
    () => false,
  );
}

/** One request's outcome: a status and problem code, or the network error if none came. */
interface Outcome {
  kind: string;
  status: number | undefined;
  contentType: string | null;
  code: string | undefined;
  body: Record<string, unknown> | undefined;
  error: string | undefined;
}

async function call(
  kind: string,
  method: string,
  route: string,
  cookie: string | undefined,
  body?: unknown,
): Promise<Outcome> {
  try {
    const res = await fetch(`${url}${route}`, {
      method,
      headers: {
        origin: ORIGIN,
        ...(cookie ? { cookie } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? null : JSON.stringify(body),
    });
    const text = await res.text();
    let json: Record<string, unknown> | undefined;
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    } catch {
      json = undefined;
    }
    const setCookie = res.headers.get('set-cookie');
    if (setCookie && json) json.cookie = setCookie.split(';')[0];
    return {
      kind,
      status: res.status,
      contentType: res.headers.get('content-type'),
      code: typeof json?.code === 'string' ? json.code : undefined,
      body: json,
      error: undefined,
    };
  } catch (error) {
    return {
      kind,
      status: undefined,
      contentType: null,
      code: undefined,
      body: undefined,
      error: String((error as Error).cause ?? error),
    };
  }
}

async function signIn(): Promise<Outcome> {
  return call('sign-in', 'POST', '/api/auth/login', undefined, {
    email: EMAIL,
    password: PASSWORD,
  });
}

/** Reads one SSE response into `seen` until it ends; returns the last id received. */
async function readStream(
  cookie: string,
  lastEventId: string | undefined,
  seen: string[],
  signal: AbortSignal,
  outcomes: Outcome[],
): Promise<string | undefined> {
  let last = lastEventId;
  let res: Response;
  try {
    res = await fetch(`${url}/api/mssp/tenants/${tenantId}/events`, {
      headers: { cookie, ...(last ? { 'last-event-id': last } : {}) },
      signal,
    });
  } catch (error) {
    if (!signal.aborted)
      outcomes.push({
        kind: 'sse',
        status: undefined,
        contentType: null,
        code: undefined,
        body: undefined,
        error: String((error as Error).cause ?? error),
      });
    return last;
  }
  if (res.status !== 200) {
    const body = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    outcomes.push({
      kind: 'sse',
      status: res.status,
      contentType: res.headers.get('content-type'),
      code: typeof body?.code === 'string' ? body.code : undefined,
      body,
      error: undefined,
    });
    return last;
  }
  outcomes.push({
    kind: 'sse',
    status: 200,
    contentType: res.headers.get('content-type'),
    code: undefined,
    body: undefined,
    error: undefined,
  });
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body ?? []) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const id = /^id: (\d+)$/m.exec(buffer.slice(0, end))?.[1];
        if (id) {
          seen.push(id);
          last = id;
        }
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
      }
    }
  } catch {
    // Hung up by us (abort) or cut by svc; either way the loop reconnects with Last-Event-ID.
  }
  return last;
}

test('issue 10 fault tolerance: PostgreSQL restarts under load; svc survives, answers 503 database_unavailable, loses no audit row and no SSE event', async (t) => {
  const login = await signIn();
  assert.equal(login.status, 200, JSON.stringify(login));
  const cookie = String(login.body?.cookie);
  const outcomes: Outcome[] = [];
  const created: { kind: string; id: string }[] = [];
  let running = true;

  const loop = async (work: () => Promise<void>) => {
    while (running) {
      await work();
      await sleep(20);
    }
  };
  let n = 0;
  const workers = [
    loop(async () => {
      outcomes.push(await signIn());
    }),
    loop(async () => {
      outcomes.push(await call('read', 'GET', '/api/mssp/tenants', cookie));
      outcomes.push(await call('read', 'GET', `/api/mssp/tenants/${tenantId}`, cookie));
      outcomes.push(await call('read', 'GET', '/api/mssp/users', cookie));
    }),
    loop(async () => {
      const email = `u${++n}-${randomUUID().slice(0, 8)}@mssp.test`;
      const o = await call('user.create', 'POST', '/api/mssp/users', cookie, {
        email,
        role: 'analyst',
      });
      outcomes.push(o);
      const user = o.body?.user as { id?: string } | undefined;
      if (o.status === 201 && user?.id) created.push({ kind: 'user.create', id: user.id });
    }),
    loop(async () => {
      const email = `c${++n}-${randomUUID().slice(0, 8)}@customer.test`;
      const o = await call(
        'tenant.user.create',
        'POST',
        `/api/mssp/tenants/${tenantId}/users`,
        cookie,
        {
          email,
        },
      );
      outcomes.push(o);
      const user = o.body?.user as { id?: string } | undefined;
      if (o.status === 201 && user?.id) created.push({ kind: 'user.create', id: user.id });
    }),
  ];

  // Events are appended by a separate writer straight into the store, before, during and
  // after the outage; failed appends during the outage simply retry.
  const writer = new pg.Pool({ ...clientConfig(target, 'app'), max: 1 });
  writer.on('error', () => undefined);
  const appender = loop(async () => {
    const client = await writer.connect().catch(() => undefined);
    if (!client) return;
    const onError = () => undefined;
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      await client.query(`SELECT set_config('app.current_tenant_id', $1, true)`, [tenantId]);
      // The set_config above gives this transaction its tenant context.
      await appendUncheckedEvent(client as TenantTx, {
        tenantId,
        streamType: 'investigation',
        streamId: randomUUID(),
        streamSeq: 1,
        type: 'fault.tick',
      });
      await client.query('COMMIT');
      client.release();
    } catch (error) {
      client.release(error as Error);
    } finally {
      client.off('error', onError);
    }
  });

  // The SSE client: reads, and reconnects with Last-Event-ID whenever its stream ends.
  const seen: string[] = [];
  const sseOutcomes: Outcome[] = [];
  let hangUp = new AbortController();
  let sseDone = false;
  const sse = (async () => {
    // From the first event on: Last-Event-ID 0 replays the tenant's whole history.
    let last: string | undefined = '0';
    while (!sseDone) {
      last = await readStream(cookie, last, seen, hangUp.signal, sseOutcomes);
      if (hangUp.signal.aborted) hangUp = new AbortController();
      else await sleep(100);
    }
  })();

  let healthyAfterMs: number | undefined;
  let events: string[] = [];
  const audit = new pg.Client(superuser);
  try {
    await sleep(1500);
    // Restart 1: fast shutdown and straight back up; in-flight statements die with 57P01.
    await server.stop();
    server = await startEmbedded(pgDir, silent);
    await sleep(1500);
    // Restart 2: down for 1.5 s; new connections are refused meanwhile. The SSE client hangs
    // up while the database is down, so it must come back through Last-Event-ID.
    await server.stop();
    hangUp.abort();
    await sleep(1500);
    server = await startEmbedded(pgDir, silent);
    const backAt = Date.now();
    while (Date.now() - backAt < 15_000) {
      if (await healthy()) {
        healthyAfterMs = Date.now() - backAt;
        break;
      }
      await sleep(100);
    }
    await sleep(1500);
    running = false;
    await Promise.all([...workers, appender]);
    // Every event now in the store; the SSE client gets a bounded while to catch up.
    await audit.connect();
    events = (
      await audit.query<{ id: string }>(
        'SELECT id::text AS id FROM events WHERE tenant_id = $1 ORDER BY events.id',
        [tenantId],
      )
    ).rows.map((r) => r.id);
    const deadline = Date.now() + 10_000;
    while (seen.length < events.length && Date.now() < deadline) await sleep(100);
  } finally {
    running = false;
    sseDone = true;
    hangUp.abort();
    await Promise.all([...workers, appender, sse]);
    await writer.end();
  }

  const tally = new Map<string, number>();
  for (const o of [...outcomes, ...sseOutcomes]) {
    const key = `${o.kind} ${o.status ?? o.error} ${o.code ?? ''}`.trim();
    tally.set(key, (tally.get(key) ?? 0) + 1);
  }
  t.diagnostic(`healthy ${healthyAfterMs} ms after the restart; events ${events.length}`);
  t.diagnostic(JSON.stringify(Object.fromEntries(tally)));
  try {
    assert.equal(child.exitCode, null, `svc serve died:\n${stderr}`);
    assert.ok(healthyAfterMs !== undefined, `/healthz not 200 within 15 s:\n${stderr}`);

    const all = [...outcomes, ...sseOutcomes];
    const ok = all.filter((o) => o.status !== undefined && o.status < 300);
    const failed = all.filter((o) => !(o.status !== undefined && o.status < 300));
    // Every request was answered, in flight at a restart or started during the outage: svc's
    // HTTP server does not depend on the database, so a connection closed without a status
    // could only be a crash or an unhandled rejection.
    assert.deepEqual(
      failed.filter((o) => o.status === undefined),
      [],
      'requests without an HTTP status',
    );
    // Every failure is the retryable 503 problem, never a 500 or another code.
    assert.deepEqual(
      failed
        .filter(
          (o) =>
            o.status !== 503 ||
            o.code !== 'database_unavailable' ||
            o.contentType !== 'application/problem+json',
        )
        .map((o) => ({ kind: o.kind, status: o.status, code: o.code })),
      [],
      'failures other than 503 database_unavailable',
    );
    assert.ok(failed.length > 0, 'the outage was observed by at least one request');
    for (const kind of ['sign-in', 'read', 'user.create', 'tenant.user.create'])
      assert.ok(
        ok.some((o) => o.kind === kind),
        `${kind} succeeded around the outage`,
      );

    // Every mutation answered 2xx has its audit row.
    const { rows } = await audit.query<{ resource_id: string }>(
      `SELECT resource_id FROM audit_log WHERE action = 'user.create' AND resource_id = ANY($1)`,
      [created.map((c) => c.id)],
    );
    assert.equal(rows.length, created.length, 'a 201 user creation without its audit row');
    // And no committed mutation lacks one (a 503 whose commit did land included).
    const orphans = await audit.query(
      `SELECT u.id FROM users u WHERE u.email <> $1
          AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.action = 'user.create' AND a.resource_id = u.id::text)`,
      [EMAIL],
    );
    assert.deepEqual(orphans.rows, [], 'users without a user.create audit row');
    const logins = await audit.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM audit_log WHERE action = 'auth.login.success'`,
    );
    assert.ok(
      (logins.rows[0]?.n ?? 0) >= ok.filter((o) => o.kind === 'sign-in').length,
      'a 200 sign-in without its audit row',
    );

    // The SSE client received every event of the tenant, in order, each exactly once.
    assert.ok(events.length > 20, `events appended: ${events.length}`);
    assert.deepEqual(seen, events, 'SSE events received vs appended');
    assert.ok(
      sseOutcomes.filter((o) => o.status === 200).length >= 2,
      'the SSE client reconnected with Last-Event-ID',
    );
  } finally {
    await audit.end().catch(() => undefined);
  }
});
