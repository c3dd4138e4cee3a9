// The single binary and the image for the packaging tests, built once per set of inputs into a
// cache outside the repository (as the test cluster's binaries are): both test files need the
// binary, CI builds it once, and a second run with the same sources builds nothing.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** What the binary is built from; the image adds its script and the pinned helm. */
const BINARY_INPUTS = [
  'src',
  'sql',
  'charts',
  'policies',
  'contracts',
  'web',
  'package.json',
  'package-lock.json',
  'scripts/build.ts',
  'scripts/build-binary.ts',
];
const IMAGE_INPUTS = [
  'scripts/build-image.sh',
  'testcluster/versions.env',
  '.ci/install-pg-client',
];

export const CACHE = path.join(
  process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'),
  'svc',
  'packaging',
);

/** SHA-256 over the paths and contents of the files git would commit under `inputs`. */
async function digestOf(inputs: string[]): Promise<string> {
  const { stdout } = await run(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...inputs],
    { cwd: ROOT, maxBuffer: 64 * 2 ** 20 },
  );
  const hash = createHash('sha256').update(process.version);
  for (const file of [...new Set(stdout.split('\0').filter(Boolean))].sort()) {
    const data = await readFile(path.join(ROOT, file)).catch(() => undefined);
    // A deleted file git still lists contributes its absence.
    hash.update(`${file}\0${data ? createHash('sha256').update(data).digest('hex') : '-'}\0`);
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * Runs `command` once for `dir` under a lock (default the cache's one), unless an earlier run
 * finished (its stamp).
 */
export async function once(
  dir: string,
  command: string,
  lock = path.join(CACHE, '.lock'),
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const stamp = path.join(dir, 'complete');
  await run(
    'flock',
    [lock, 'bash', '-c', `[ -f '${stamp}' ] || { ${command} && touch '${stamp}'; }`],
    { cwd: ROOT, maxBuffer: 64 * 2 ** 20 },
  );
}

/**
 * Removes what older inputs built beside `keep`: each binary is 170 MiB. An older release's
 * build (`old-<sha>`, test/realnode/fixtures/old-release.ts) stays.
 */
async function pruneBeside(keep: string): Promise<void> {
  const parent = path.dirname(keep);
  const prefix = path.basename(parent) === 'packaging' ? '' : 'image-';
  for (const entry of await readdir(parent)) {
    if (
      entry === path.basename(keep) ||
      entry.startsWith('.') ||
      entry.startsWith('old-') ||
      !entry.startsWith(prefix)
    )
      continue;
    await rm(path.join(parent, entry), { recursive: true, force: true });
  }
}

export async function builtBinary(): Promise<string> {
  const dir = path.join(CACHE, await digestOf(BINARY_INPUTS));
  const file = path.join(dir, 'svc-linux-x64');
  await once(dir, `'${process.execPath}' --import tsx scripts/build-binary.ts --out '${file}'`);
  await pruneBeside(dir);
  return file;
}

export async function builtImage(): Promise<string> {
  const binary = await builtBinary();
  const dir = path.join(path.dirname(binary), `image-${await digestOf(IMAGE_INPUTS)}`);
  const image = path.join(dir, 'svc-image.oci.tar');
  await once(dir, `bash scripts/build-image.sh --binary '${binary}' --out '${image}'`);
  await pruneBeside(dir);
  return image;
}

export interface Served {
  child: ChildProcess;
  output: () => string;
  /** Milliseconds from spawn to the first 200 from /healthz. */
  healthyAfterMs: number;
  stop(): Promise<void>;
}

/** Spawns `program args` (svc serve), waits for /healthz on `port`, and stops it on demand. */
export async function serveUntilHealthy(
  program: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; port: number; cwd?: string },
): Promise<Served> {
  const started = performance.now();
  const child = spawn(program, args, {
    env: options.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`svc exited early (${child.exitCode}):\n${output}`);
    try {
      const res = await fetch(`http://127.0.0.1:${options.port}/healthz`);
      if (res.status === 200)
        return { child, output: () => output, healthyAfterMs: performance.now() - started, stop };
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  await stop();
  throw new Error(`svc did not become healthy:\n${output}`);
}

/**
 * Signs in and reads the identity back with the session cookie: argon2 and the API at work.
 * `origin` is where the browser would be: loopback for an embedded database, else
 * `https://<SVC_MSSP_HOSTNAME>`.
 */
export async function signInAndRead(
  port: number,
  email: string,
  password: string,
  origin = `http://127.0.0.1:${port}`,
): Promise<{ login: number; me: number; email?: string }> {
  const base = `http://127.0.0.1:${port}`;
  const login = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin },
    body: JSON.stringify({ email, password }),
  });
  const cookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const me = await fetch(`${base}/api/auth/me`, { headers: { cookie } });
  const body = (await me.json()) as { identity?: { email?: string } };
  return {
    login: login.status,
    me: me.status,
    ...(body.identity?.email ? { email: body.identity.email } : {}),
  };
}
