import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../src/db/embedded.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

let dataDir: string;
let port: number;
let env: NodeJS.ProcessEnv;

before(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-start-'));
  port = await freePort();
  env = { ...process.env, SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_LOG_LEVEL: 'info' };
});
after(() => rm(dataDir, { recursive: true, force: true }));

interface Started {
  child: ChildProcess;
  output: () => string;
}

/** `npm start`, exactly as the README says, in its own process group so it can be stopped whole. */
async function start(): Promise<Started> {
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`svc exited early:\n${output}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.status === 200) return { child, output: () => output };
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  throw new Error(`svc did not become healthy:\n${output}`);
}

async function stop({ child }: Started): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  if (child.pid) process.kill(-child.pid, 'SIGTERM');
  await exited;
  assert.ok(await gone(path.join(dataDir, 'pg', 'postmaster.pid')), 'postgres stopped with svc');
}

async function signIn(
  email: string,
  password: string,
): Promise<{ status: number; must_change?: boolean | undefined }> {
  const res = await fetch(`http://127.0.0.1:${port}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}` },
    body: JSON.stringify({ email, password }),
  });
  const body = (await res.json()) as { must_change?: boolean };
  return res.status === 200
    ? { status: res.status, must_change: body.must_change }
    : { status: res.status };
}

/** npm exits on the signal at once; svc and its postgres finish shutting down after it. */
async function gone(file: string): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    try {
      await stat(file);
    } catch {
      return true;
    }
    await sleep(100);
  }
  return false;
}

async function svc(...args: string[]): Promise<string> {
  const { stdout } = await run('npm', ['run', '--silent', 'svc', '--', ...args], {
    cwd: ROOT,
    env,
  });
  return stdout.trim();
}

test('npm start serves /healthz on an embedded database; a second start reuses the data', async () => {
  const first = await start();
  const health = await (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
  assert.deepEqual(health, { status: 'ok', auth_mode: 'internal', database: { ready: true } });
  assert.match(first.output(), /"applied":\["0001_roles\.sql"/);

  const redacted = await svc('db', 'url', '--role', 'app');
  assert.match(redacted, /^postgresql:\/\/svc_app:REDACTED@127\.0\.0\.1:\d+\/svc$/);
  assert.match(
    await svc('db', 'url', '--role', 'audit'),
    /^postgresql:\/\/svc_audit:REDACTED@127\.0\.0\.1:\d+\/svc$/,
  );
  const url = await svc('db', 'url', '--role', 'app', '--show-password');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`INSERT INTO tenants (slug, display_name) VALUES ('keepme', 'Keep Me')`);
  await client.end();
  const credentials = await readFile(path.join(dataDir, 'credentials.json'), 'utf8');
  const printed = /created platform_admin admin@localhost with password:\n\n {4}(\S+)\n/.exec(
    first.output(),
  );
  assert.ok(printed?.[1], 'the first start prints the generated admin password');
  assert.equal(
    first.output().split(printed[1]).length,
    2,
    'the password appears exactly once in all output',
  );
  const login = await signIn('admin@localhost', printed[1]);
  assert.deepEqual([login.status, login.must_change], [200, true]);
  await stop(first);

  const reset = await svc('auth', 'set-password', 'admin@localhost', '--generate');
  const generated = /\n(\S+)$/.exec(reset)?.[1];
  assert.ok(generated, reset);
  const created = await run(
    'bash',
    [
      '-c',
      'printf "%s\\n" "a long enough passphrase" | npm run --silent svc -- auth create-admin --email second@localhost',
    ],
    { cwd: ROOT, env },
  );
  assert.match(created.stdout, /platform_admin second@localhost created/);

  const second = await start();
  try {
    assert.match(second.output(), /"applied":\[\]/);
    assert.doesNotMatch(
      second.output(),
      /created platform_admin/,
      'only the first start creates an admin',
    );
    assert.equal(
      (await signIn('admin@localhost', printed[1])).status,
      401,
      'set-password replaced it',
    );
    assert.deepEqual(await signIn('admin@localhost', generated), {
      status: 200,
      must_change: true,
    });
    assert.deepEqual(await signIn('second@localhost', 'a long enough passphrase'), {
      status: 200,
      must_change: true,
    });
    assert.equal(await readFile(path.join(dataDir, 'credentials.json'), 'utf8'), credentials);
    const again = new pg.Client({ connectionString: url });
    await again.connect();
    const { rows } = await again.query(`SELECT display_name FROM tenants WHERE slug = 'keepme'`);
    await again.end();
    assert.deepEqual(rows, [{ display_name: 'Keep Me' }]);

    const { stdout } = await run(
      'npm',
      [
        'run',
        '--silent',
        'svc',
        '--',
        'psql',
        '--tenant',
        'keepme',
        '--',
        '-Atc',
        "SELECT slug, current_setting('app.current_tenant_id') = id::text, current_user FROM audit_current_tenant",
      ],
      { cwd: ROOT, env },
    );
    assert.equal(stdout.trim(), 'keepme|t|svc_audit');
    // Issue 27 item 1: the audit session is read-only by grant and holds no credential, even
    // when it switches the read-only default off.
    // Each -c is its own transaction, so the second runs with the read-only default off.
    const readWrite = ['-c', 'SET default_transaction_read_only = off', '-c'];
    for (const statement of [
      ['-c', 'SELECT password_hash FROM password_credentials'],
      ['-c', 'SELECT secret_hash FROM sessions'],
      [...readWrite, "UPDATE tenants SET display_name = 'x'"],
      [
        ...readWrite,
        "INSERT INTO audit_log (actor_principal, actor_id, action, resource_type) VALUES ('System', 'system:x', 'x.y', 'x')",
      ],
    ]) {
      const psql = ['psql', '--tenant', 'keepme', '--', '-v', 'ON_ERROR_STOP=1', ...statement];
      const refused = await run('npm', ['run', '--silent', 'svc', '--', ...psql], {
        cwd: ROOT,
        env,
      }).then(
        () => assert.fail(`svc psql ran: ${statement.at(-1)}`),
        (error: { stderr: string }) => error.stderr,
      );
      assert.match(refused, /permission denied for table/, statement.at(-1));
    }
    const migrated = await svc('migrate');
    assert.match(migrated, /migrations applied: none \(up to date\)/);
  } finally {
    await stop(second);
  }
});

test('issue 31: as a non-root user, svc serve starts its embedded database in a directory it may write but not chmod (a Kubernetes emptyDir)', async () => {
  // The image runs as uid 10001 (its own /etc/passwd names it); here `nobody`, whom this
  // machine's passwd knows (initdb looks its user up). An emptyDir under fsGroup: owned by root,
  // group writable, setgid.
  const user = 65534;
  const volume = await mkdtemp(path.join(tmpdir(), 'svc-emptydir-'));
  const home = await mkdtemp(path.join(tmpdir(), 'svc-home-'));
  await chown(volume, 0, user);
  await chmod(volume, 0o2775);
  await chown(home, user, user);
  const apiPort = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    uid: user,
    gid: user,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      SVC_DATA_DIR: volume,
      SVC_PORT: String(apiPort),
      SVC_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const deadline = Date.now() + 90_000;
    let healthy = false;
    while (!healthy && Date.now() < deadline && child.exitCode === null) {
      healthy = await fetch(`http://127.0.0.1:${apiPort}/healthz`).then(
        (res) => res.status === 200,
        () => false,
      );
      if (!healthy) await sleep(250);
    }
    assert.ok(healthy, `svc serve as uid ${user} did not become healthy:\n${output}`);
    assert.equal((await stat(path.join(volume, 'pg', 'PG_VERSION'))).uid, user);
    // The volume's own mode is left as the kubelet made it.
    assert.equal((await stat(volume)).mode & 0o7777, 0o2775);
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
    assert.equal(await exited, 0, output);
    await rm(volume, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
  }
});

test('svc psql refuses an unknown tenant', async () => {
  await assert.rejects(
    svc('psql', '--tenant', 'nobody-here', '--', '-c', 'SELECT 1'),
    /no tenant with slug or id "nobody-here"/,
  );
});

test('an invalid setting stops svc with one line naming the variable, exit code 2', async () => {
  const failed = await run('npm', ['run', '--silent', 'svc', '--', 'serve'], {
    cwd: ROOT,
    env: { ...env, SVC_PORT: 'http' },
  }).then(
    () => assert.fail('svc started with SVC_PORT=http'),
    (error: { code: number; stderr: string }) => error,
  );
  assert.equal(failed.code, 2);
  assert.equal(
    failed.stderr,
    'svc: invalid configuration: SVC_PORT: expected an integer port 0-65535 (0: any free port), got "http"\n',
  );
});

test('svc --help describes every command', async () => {
  const help = await svc('--help');
  for (const command of ['serve', 'migrate', 'db', 'psql', 'auth'])
    assert.match(help, new RegExp(`\\n  ${command}\\b`));
  assert.match(await svc('db', 'url', '--help'), /--show-password/);
  assert.match(await svc('psql', '--help'), /--tenant <slug-or-uuid>/);
  assert.match(await svc('auth', 'set-password', '--help'), /--generate/);
  assert.match(await svc('auth', 'create-admin', '--help'), /--email <email>/);
});
