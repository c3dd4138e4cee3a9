import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Credential } from '../../src/config/index.ts';
import { freePort } from '../../src/db/embedded.ts';
import type { DatabaseTarget } from '../../src/db/target.ts';

/** Debian's package (1.18 on Debian 12); its system service stays off, tests run their own. */
export const PGBOUNCER = '/usr/sbin/pgbouncer';
/** pgbouncer refuses to run as root: as root the instance runs as nobody. */
const NOBODY = 65534;

export interface Pgbouncer {
  host: string;
  port: number;
  /** The target with the pooler in front: pooled pools go through it, direct ones do not. */
  target: DatabaseTarget;
  /** Rows of a SHOW command on the admin console (needs `admin` at start). */
  show(what: 'CLIENTS' | 'SERVERS' | 'POOLS' | 'STATS'): Promise<Record<string, string>[]>;
  /** pgbouncer's own log, for a failing test's message. */
  log(): Promise<string>;
  stop(): Promise<void>;
}

export interface PgbouncerOptions {
  /** Server connections per (database, role): small, so clients really share them. */
  poolSize?: number;
  /** The role (one in the auth file) that may run SHOW commands on the admin console. */
  admin?: Credential;
}

/** pgbouncer's auth_file format: `"user" "secret"`, a double quote doubled. */
function authLine(user: string, password: string): string {
  const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
  return `${quote(user)} ${quote(password)}`;
}

/**
 * A private pgbouncer in transaction-pooling mode in front of `target`'s server, on a free
 * loopback port. Clients authenticate with SCRAM against the roles' passwords in an auth_file;
 * pgbouncer logs in to PostgreSQL with the same passwords. Every database name is passed
 * through (the `*` entry), so one instance serves every cloned test database.
 */
export async function startPgbouncer(
  target: DatabaseTarget,
  options: PgbouncerOptions = {},
): Promise<Pgbouncer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-pgbouncer-'));
  const port = await freePort();
  const users = Object.values(target.credentials).map((c) => authLine(c.user, c.password));
  const ini = [
    '[databases]',
    `* = host=${target.host} port=${target.port}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = scram-sha-256',
    `auth_file = ${path.join(dir, 'users.txt')}`,
    'pool_mode = transaction',
    `default_pool_size = ${options.poolSize ?? 3}`,
    'max_client_conn = 2000',
    `admin_users = ${options.admin?.user ?? ''}`,
    `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    'log_connections = 0',
    'log_disconnections = 0',
    '',
  ].join('\n');
  await writeFile(path.join(dir, 'users.txt'), `${users.join('\n')}\n`, { mode: 0o600 });
  await writeFile(path.join(dir, 'pgbouncer.ini'), ini, { mode: 0o600 });
  await writeFile(path.join(dir, 'pgbouncer.log'), '', { mode: 0o600 });
  const root = process.getuid?.() === 0;
  if (root) {
    await chmod(dir, 0o700);
    for (const name of ['', 'users.txt', 'pgbouncer.ini', 'pgbouncer.log']) {
      await chown(path.join(dir, name), NOBODY, NOBODY);
    }
  }
  const [command, args] = root
    ? ['setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', PGBOUNCER]]
    : [PGBOUNCER, []];
  const child = spawn(command, [...args, path.join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const log = () => readFile(path.join(dir, 'pgbouncer.log'), 'utf8').catch(() => '');
  const stop = async () => {
    await stopChild(child, exited);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await untilAccepting(port, exited, async () => `${stderr}${await log()}`);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    host: '127.0.0.1',
    port,
    target: { ...target, pooler: { host: '127.0.0.1', port } },
    show: async (what) => {
      if (!options.admin) throw new Error('startPgbouncer without an admin: no SHOW');
      const adminConsole = new pg.Client({
        host: '127.0.0.1',
        port,
        database: 'pgbouncer',
        user: options.admin.user,
        password: options.admin.password,
      });
      await adminConsole.connect();
      try {
        // The admin console speaks the simple protocol only: no parameters.
        return (await adminConsole.query<Record<string, string>>(`SHOW ${what}`)).rows;
      } finally {
        await adminConsole.end();
      }
    },
    log,
    stop,
  };
}

/** Waits until the port takes a connection, or fails with pgbouncer's words when it exits. */
async function untilAccepting(
  port: number,
  exited: Promise<number | null>,
  output: () => Promise<string>,
): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  for (;;) {
    if (gone) throw new Error(`pgbouncer exited before accepting:\n${await output()}`);
    if (await accepts(port)) return;
    await sleep(20);
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** SIGINT is pgbouncer's "shut down now"; it exits closing every connection. */
async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGINT');
  await exited;
}
