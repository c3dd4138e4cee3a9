// Issue 17, the OCI image: unpacked with umoci and run with chroot as the image's user, the
// way a container runtime would start it (same root filesystem, user, environment), against a
// real PostgreSQL on loopback (chroot shares the network namespace).
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../../src/db/embedded.ts';
import { ensureInstall } from '../../src/orchestrator/install.ts';
import {
  createTestDatabase,
  externalDatabaseEnv,
  type TestDatabase,
  testServer,
} from '../support/database.ts';
import { builtImage, serveUntilHealthy, signInAndRead } from './artifacts.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const MSSP_HOST = 'mssp.example.test';
const CHROOT = '/usr/sbin/chroot';

interface ImageConfig {
  config: {
    User: string;
    Entrypoint: string[];
    Cmd: string[];
    Env: string[];
    Labels: Record<string, string>;
    Volumes: Record<string, object>;
  };
}

let work: string;
let archive: string;
let rootfs: string;
let imageConfig: ImageConfig;
/** The image's environment, as a runtime passes it to the entrypoint. */
let imageEnv: Record<string, string>;
let user: string;
let db: TestDatabase;

async function blob(layout: string, digest: string): Promise<unknown> {
  const [algorithm, hex] = digest.split(':');
  return JSON.parse(await readFile(path.join(layout, 'blobs', algorithm ?? '', hex ?? ''), 'utf8'));
}

before(async () => {
  archive = await builtImage();
  work = await mkdtemp(path.join(tmpdir(), 'svc-image-'));
  const layout = path.join(work, 'layout');
  await mkdir(layout);
  await run('tar', ['-C', layout, '-xf', archive]);
  await run('umoci', ['unpack', '--image', `${layout}:svc`, path.join(work, 'bundle')]);
  rootfs = path.join(work, 'bundle', 'rootfs');
  const { manifests } = JSON.parse(await readFile(path.join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string }[];
  };
  const manifest = (await blob(layout, manifests[0]?.digest ?? '')) as {
    config: { digest: string };
  };
  imageConfig = (await blob(layout, manifest.config.digest)) as ImageConfig;
  imageEnv = Object.fromEntries(
    imageConfig.config.Env.map((pair) => [
      pair.slice(0, pair.indexOf('=')),
      pair.slice(pair.indexOf('=') + 1),
    ]),
  );
  user = imageConfig.config.User;
  db = await createTestDatabase();
});
after(async () => {
  await db?.drop();
  await rm(work, { recursive: true, force: true });
});

/** Every path of the root filesystem outside its volumes, with what a write would change. */
async function listing(dir: string, volumes: string[], rel = ''): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const name of await readdir(path.join(dir, rel))) {
    const child = `${rel}/${name}`;
    if (volumes.includes(child)) continue;
    const info = await lstat(path.join(dir, child));
    found.set(child, `${info.mode}:${info.size}:${info.mtimeMs}:${info.ino}`);
    if (info.isDirectory())
      for (const [k, v] of await listing(dir, volumes, child)) found.set(k, v);
  }
  return found;
}

test('issue 17: the image runs svc as uid 10001 with serve as its command, and carries version and source labels', async () => {
  assert.equal(user, '10001:10001');
  assert.deepEqual(imageConfig.config.Entrypoint, ['/usr/local/bin/svc']);
  assert.deepEqual(imageConfig.config.Cmd, ['serve']);
  assert.deepEqual(Object.keys(imageConfig.config.Volumes).sort(), ['/tmp', '/var/lib/svc']);
  const { version } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  const labels = imageConfig.config.Labels;
  assert.equal(labels['org.opencontainers.image.version'], version);
  assert.match(labels['org.opencontainers.image.revision'] ?? '', /^([0-9a-f]{40}|unknown)$/);
  assert.ok(labels['org.opencontainers.image.source']);
  assert.match(
    labels['org.opencontainers.image.created'] ?? '',
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
  );
  const dataDir = await stat(path.join(rootfs, 'var/lib/svc'));
  assert.deepEqual([dataDir.uid, dataDir.mode & 0o777], [10001, 0o700]);
  const etcPasswd = await readFile(path.join(rootfs, 'etc/passwd'), 'utf8');
  assert.match(etcPasswd, /^svc:x:10001:10001:/m);
});

test('issue 17: svc --version and helm run from the image root as its user', async () => {
  const asUser = ['--userspec', user, rootfs];
  const version = await run(CHROOT, [...asUser, '/usr/local/bin/svc', '--version'], {
    env: imageEnv,
  });
  assert.match(version.stdout, /^svc \d+\.\d+\.\d+\nsvc-system chart /);
  const helm = await run(CHROOT, [...asUser, '/usr/local/bin/helm', 'version', '--short'], {
    env: imageEnv,
  });
  assert.match(helm.stdout, /^v\d+\.\d+\.\d+/);
});

test('issue 17: svc serve from the image against a real PostgreSQL signs in and reads, writing only to its volumes', async (t) => {
  const before = await listing(rootfs, ['/var/lib/svc', '/tmp']);
  const port = await freePort();
  const env = {
    ...imageEnv,
    ...externalDatabaseEnv(db.target),
    SVC_PORT: String(port),
    // An external database means a real install: state-changing requests need its hostname.
    SVC_MSSP_HOSTNAME: MSSP_HOST,
  };
  const email = 'image-admin@example.test';
  const created = spawnSync(
    CHROOT,
    ['--userspec', user, rootfs, '/usr/local/bin/svc', 'auth', 'create-admin', '--email', email],
    { env, input: 'an image passphrase\n', encoding: 'utf8' },
  );
  assert.equal(created.status, 0, created.stderr);
  const served = await serveUntilHealthy(
    CHROOT,
    ['--userspec', user, rootfs, ...imageConfig.config.Entrypoint, ...imageConfig.config.Cmd],
    { env, port },
  );
  try {
    const health = await (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
    assert.deepEqual(health, { status: 'ok', auth_mode: 'internal', database: { ready: true } });
    assert.deepEqual(
      await signInAndRead(port, email, 'an image passphrase', `https://${MSSP_HOST}`),
      {
        login: 200,
        me: 200,
        email,
      },
    );
  } finally {
    await served.stop();
  }
  assert.deepEqual(
    await listing(rootfs, ['/var/lib/svc', '/tmp']),
    before,
    'nothing outside /var/lib/svc and /tmp changed: a read-only root suffices',
  );
  const rootfsBytes = spawnSync('du', ['-sb', rootfs], { encoding: 'utf8' }).stdout.split('\t')[0];
  t.diagnostic(
    `image archive ${((await stat(archive)).size / 2 ** 20).toFixed(1)} MiB, root filesystem ${(Number(rootfsBytes) / 2 ** 20).toFixed(1)} MiB; healthy after ${Math.round(served.healthyAfterMs)} ms`,
  );
});

test('svc db backup runs from the image as its user: its pg_dump fits the in-chart PostgreSQL 18', async () => {
  const asUser = ['--userspec', user, rootfs];
  for (const tool of ['pg_dump', 'pg_restore']) {
    const version = await run(CHROOT, [...asUser, `/usr/local/bin/${tool}`, '--version'], {
      env: imageEnv,
    });
    assert.match(version.stdout, new RegExp(`^${tool} \\(PostgreSQL\\) (1[89]|[2-9]\\d)\\.`));
  }
  const installId = randomUUID();
  await ensureInstall(db.target, {
    msspId: undefined,
    msspName: 'Image MSSP',
    installId,
    installLabel: 'image',
  });
  const { superuser } = testServer();
  const bootstrap = new URL('postgresql://placeholder/postgres');
  bootstrap.hostname = superuser.host;
  bootstrap.port = String(superuser.port);
  bootstrap.username = encodeURIComponent(superuser.user);
  bootstrap.password = encodeURIComponent(superuser.password);
  const backup = spawnSync(
    CHROOT,
    [...asUser, '/usr/local/bin/svc', 'db', 'backup', '--out', '/tmp/image-backup.dump'],
    {
      env: {
        ...imageEnv,
        ...externalDatabaseEnv(db.target),
        SVC_DATABASE_BOOTSTRAP_URL: bootstrap.toString(),
      },
      encoding: 'utf8',
    },
  );
  try {
    assert.equal(backup.status, 0, backup.stderr);
    const manifest = JSON.parse(
      await readFile(path.join(rootfs, 'tmp/image-backup.dump.manifest.json'), 'utf8'),
    ) as { installId: string; archive: { bytes: number } };
    assert.equal(manifest.installId, installId);
    assert.equal(
      (await stat(path.join(rootfs, 'tmp/image-backup.dump'))).size,
      manifest.archive.bytes,
    );
  } finally {
    await rm(path.join(rootfs, 'tmp/image-backup.dump'), { force: true });
    await rm(path.join(rootfs, 'tmp/image-backup.dump.manifest.json'), { force: true });
  }
});
