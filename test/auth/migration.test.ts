import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort } from '../../src/db/embedded.ts';
import { setPassword } from '../../src/domains/users/user-repository.ts';
import { appendNote, openStream, waitFor } from '../events/support.ts';
import { client, seedUser, startTestApi } from '../support/api.ts';
import { createTestDatabase, externalDatabaseEnv, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * Spec §5.10 walked end to end on real processes: `svc serve` in proxy mode over one database,
 * the real `svc auth set-password` for every user while the proxy still authenticates
 * (step 3), the restart in internal mode (step 4), and the rollback. Issue 27 item 2: step 2's
 * "behaviour unchanged" must hold through step 3, impersonation tokens included.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MSSP_HOST = 'mssp.example.test';
const ORIGIN = `https://${MSSP_HOST}`;
const ANALYST = 'ana@mssp.test';
const CUSTOMER = 'cv@acme.test';
const ANALYST_PASSWORD = 'migrating analyst passphrase';
const CUSTOMER_PASSWORD = 'migrating customer passphrase';

let db: TestDatabase;
let dataDir: string;
let port: number;
let tenant: string;
let child: ChildProcess | undefined;

before(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-migration-'));
  port = await freePort();
  tenant = await createTenant(db.pools.app);
  // A proxy-mode install: users provisioned by an admin, none with a password.
  await db.pools.app.query(`INSERT INTO users (email, role) VALUES ($1, 'analyst')`, [ANALYST]);
  await db.app.withTenant(tenant, (tx) =>
    tx.query(`INSERT INTO users (tenant_id, email, role) VALUES ($1, $2, 'customer_viewer')`, [
      tenant,
      CUSTOMER,
    ]),
  );
});
/** A failing walk must not leave its `svc serve` running. */
afterEach(async () => {
  await stop();
});
after(async () => {
  await stop();
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** The environment of this install, as an operator would write it; the mode varies. */
function environment(mode: 'proxy' | 'internal'): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_AUTH_MODE: mode,
    SVC_TRUSTED_PROXY_CIDRS: '127.0.0.0/8',
    SVC_MSSP_HOSTNAME: MSSP_HOST,
    SVC_PORT: String(port),
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
    ...externalDatabaseEnv(db.target),
  };
  delete env.KUBECONFIG;
  return env;
}

/** `svc serve` as its own OS process, until /healthz answers 200. */
async function start(mode: 'proxy' | 'internal'): Promise<void> {
  // The same Node as this test (24), whatever `node` on PATH is.
  const started = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env: environment(mode),
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child = started;
  let stderr = '';
  started.stderr?.on('data', (d) => {
    stderr += d;
  });
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (started.exitCode !== null) throw new Error(`svc serve exited: ${stderr}`);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      async (r) => (r.status === 200 ? ((await r.json()) as { auth_mode: string }) : undefined),
      () => undefined,
    );
    if (health) {
      assert.equal(health.auth_mode, mode);
      return;
    }
    await sleep(250);
  }
  throw new Error(`svc serve did not become healthy: ${stderr}`);
}

async function stop(): Promise<void> {
  const running = child;
  child = undefined;
  if (!running?.pid || running.exitCode !== null || running.signalCode !== null) return;
  const exited = new Promise((resolve) => running.once('exit', resolve));
  process.kill(-running.pid, 'SIGTERM');
  await exited;
}

/** `svc auth set-password <email>` as the operator runs it, the password piped on stdin. */
function setPasswordCli(email: string, password: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const cli = execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'auth', 'set-password', email],
      { cwd: ROOT, env: environment('proxy'), timeout: 90_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error}\n${stderr}`)) : resolve(stdout),
    );
    cli.stdin?.end(`${password}\n`);
  });
}

interface Answer {
  status: number;
  body: Record<string, unknown> & { code?: string };
  cookie: string | undefined;
}

/** One request to the running svc, from 127.0.0.1 (the trusted proxy's address). */
async function call(
  method: string,
  route: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Answer> {
  const res = await fetch(`http://127.0.0.1:${port}${route}`, {
    method,
    headers: {
      origin: ORIGIN,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as Answer['body']) : {},
    cookie: res.headers.get('set-cookie')?.split(';')[0],
  };
}

const asAnalyst = { 'X-Forwarded-Email': ANALYST };
const asCustomer = { 'X-Forwarded-Email': CUSTOMER };

/** Everything a proxy-mode user does here, each answer expected to be a success. */
async function proxyModeWorks(label: string): Promise<void> {
  const tenants = await call('GET', '/api/mssp/tenants', asAnalyst);
  assert.equal(tenants.status, 200, `${label}: MSSP API by proxy headers`);
  const minted = await call('POST', `/api/mssp/impersonate/${tenant}`, asAnalyst, {
    reason: 'view as customer',
  });
  assert.equal(minted.status, 200, `${label}: impersonation token minted`);
  const bearer = { ...asAnalyst, authorization: `Bearer ${String(minted.body.token)}` };
  const viewed = await call('GET', `/api/mssp/tenants/${tenant}/incidents`, bearer);
  assert.equal(viewed.status, 200, `${label}: impersonation token used`);
  const overview = await call('GET', '/api/tenant/overview', asCustomer);
  assert.equal(overview.status, 200, `${label}: tenant API by proxy headers`);
  const login = await call('POST', '/api/auth/login', {}, { email: ANALYST, password: 'x' });
  assert.equal(login.status, 404, `${label}: internal auth endpoints are 404 in proxy mode`);
}

/** Signs in with the password set in step 3; must_change sends the user through the change. */
async function firstInternalSignIn(email: string, password: string, check: string) {
  const login = await call('POST', '/api/auth/login', {}, { email, password });
  assert.equal(login.status, 200, `${email} signs in with the password set in proxy mode`);
  assert.deepEqual([login.body.must_change, login.body.next], [true, '/account/password']);
  const cookie = { cookie: login.cookie ?? '' };
  const blocked = await call('GET', check, cookie);
  assert.deepEqual([blocked.status, blocked.body.code], [403, 'password_change_required']);
  const changed = await call('POST', '/api/auth/password/change', cookie, {
    current_password: password,
    new_password: `${password} renewed`,
  });
  assert.equal(changed.status, 200);
  assert.equal((await call('GET', check, cookie)).status, 200, `${email} works after the change`);
}

test('§5.10 proxy → internal: set-password in proxy mode changes nothing, internal sign-in forces the change, rollback restores the proxy', async () => {
  // Steps 1-2: the new version in proxy mode.
  await start('proxy');
  await proxyModeWorks('step 2');

  // Step 3 with the real CLI, while the proxy-mode server runs.
  assert.match(await setPasswordCli(ANALYST, ANALYST_PASSWORD), /password set for/);
  assert.match(await setPasswordCli(CUSTOMER, CUSTOMER_PASSWORD), /password set for/);
  const superuser = new pg.Client(db.superuser);
  await superuser.connect();
  try {
    const { rows } = await superuser.query<{ email: string; must_change: boolean }>(
      `SELECT u.email, c.must_change FROM users u JOIN password_credentials c ON c.user_id = u.id
        ORDER BY u.email`,
    );
    assert.deepEqual(rows, [
      { email: ANALYST, must_change: true },
      { email: CUSTOMER, must_change: true },
    ]);
    const audit = await superuser.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM audit_log WHERE action = 'auth.password.reset.admin'
          AND actor_id = 'system:cli'`,
    );
    assert.equal(audit.rows[0]?.n, 2, 'each set-password is audited');
  } finally {
    await superuser.end();
  }
  // "Behaviour unchanged": the pending must_change belongs to internal mode.
  await proxyModeWorks('step 3');

  // Step 4: internal mode on the same database.
  await stop();
  await start('internal');
  const byHeaders = await call('GET', '/api/mssp/tenants', asAnalyst);
  assert.deepEqual(
    [byHeaders.status, byHeaders.body.code],
    [401, 'unauthenticated'],
    'identity headers are ignored in internal mode',
  );
  assert.equal((await call('GET', '/api/tenant/overview', asCustomer)).status, 401);
  await firstInternalSignIn(ANALYST, ANALYST_PASSWORD, '/api/mssp/tenants');
  await firstInternalSignIn(CUSTOMER, CUSTOMER_PASSWORD, '/api/tenant/overview');

  // Rollback: the mode back and a restart; the proxy authenticates again.
  await stop();
  await start('proxy');
  await proxyModeWorks('rollback');
});

test('§5.10 step 3 issue 27 item 2: a must_change set in proxy mode ends no impersonation stream', async () => {
  const api = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: ['127.0.0.0/8'],
    hash: { params: TEST_HASH_PARAMS },
  });
  const opened = new Set<() => void>();
  try {
    const userId = await seedUser(db, api.hasher, { email: 'streamer@mssp.test', role: 'analyst' });
    const headers = { 'X-Forwarded-Email': 'streamer@mssp.test' };
    const minted = await client(api, headers).call('POST', `/api/mssp/impersonate/${tenant}`, {
      reason: 'view as customer',
    });
    assert.equal(minted.status, 200);
    const stream = await openStream(
      `${api.url}/api/mssp/tenants/${tenant}/events`,
      { ...headers, authorization: `Bearer ${String(minted.body.token)}` },
      opened,
    );
    await waitFor('the stream is watched', () => api.watch.status().watched === 1);
    // What `svc auth set-password` writes (the CLI itself runs in the test above).
    await db.app.withoutTenant(async (tx) =>
      setPassword(tx, userId, await api.hasher.hash('a password for later'), true, new Date()),
    );
    // Two full re-check passes after the change (a pass under way when it landed may have
    // read the row before it), unless the stream ends first: an ended lease stops the passes.
    const passes = api.watch.status().passes;
    await waitFor(
      'two re-check passes or the end of the stream',
      () => api.watch.status().passes >= passes + 2 || api.watch.status().watched === 0,
      30_000,
    );
    assert.equal(api.watch.status().watched, 1, 'the stream is still open');
    const note = await appendNote(db.app, tenant, 'still streaming');
    assert.equal((await stream.next(10_000))?.id, note.id, 'the stream still delivers');
    assert.equal(api.watch.status().watched, 1);
  } finally {
    for (const close of opened) close();
    await api.close();
  }
});
