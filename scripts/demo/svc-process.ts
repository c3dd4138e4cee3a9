import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface SvcServe {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  /** The platform_admin svc created on its first start, with the password it printed once. */
  readonly firstAdmin: { email: string; password: string };
  /** The embedded PostgreSQL's postmaster, which svc started and stops on SIGTERM. */
  database(): Promise<{ pid: number; port: number }>;
  /** SIGTERM (svc then stops its database), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface SvcServeOptions {
  readonly port: number;
  readonly dataDir: string;
  readonly logFile: string;
  readonly env: Record<string, string>;
  readonly timeoutMs?: number;
  /** Called once the process exists, before it is healthy, so a stop meanwhile reaches it. */
  readonly onSpawn?: (process: { pid: number; stop(): Promise<void> }) => void;
}

const FIRST_ADMIN = /created platform_admin (\S+) with password:\n\n {4}(\S+)\n/;

/**
 * Runs the real `svc serve` (the node binary itself, so a signal reaches svc and nothing else)
 * on the demo's own data directory: with no database configured it starts the embedded
 * PostgreSQL as `npm start` does. Its output goes to `logFile`; the first admin's password is
 * read from it once and never logged elsewhere.
 */
export async function startSvcServe(options: SvcServeOptions): Promise<SvcServe> {
  const log = openSync(options.logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...options.env,
      SVC_DATA_DIR: options.dataDir,
      SVC_PORT: String(options.port),
    },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const { pid } = child;
  if (pid === undefined) throw new Error('could not start svc serve');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (graceMs = 30_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const late = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(late);
  };
  options.onSpawn?.({ pid, stop: () => stop() });
  try {
    const url = `http://127.0.0.1:${options.port}`;
    await healthy(child, url, options.logFile, options.timeoutMs ?? 120_000);
    const printed = FIRST_ADMIN.exec(await readFile(options.logFile, 'utf8'));
    if (!printed?.[1] || !printed[2]) throw new Error('svc printed no first admin');
    return {
      child,
      pid,
      url,
      firstAdmin: { email: printed[1], password: printed[2] },
      database: () => postmaster(options.dataDir),
      stop,
    };
  } catch (error) {
    await stop(5_000);
    throw error;
  }
}

async function healthy(child: ChildProcess, url: string, logFile: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`svc serve exited early:\n${await tail(logFile)}`);
    }
    const status = await fetch(`${url}/healthz`).then(
      (res) => res.status,
      () => 0,
    );
    if (status === 200) return;
    await sleep(250);
  }
  throw new Error(`svc serve did not become healthy:\n${await tail(logFile)}`);
}

async function tail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Where svc's embedded server runs: `embedded.json` names a relocated cluster directory. */
async function postmaster(dataDir: string): Promise<{ pid: number; port: number }> {
  const state = JSON.parse(await readFile(path.join(dataDir, 'embedded.json'), 'utf8')) as {
    pgDir?: string;
  };
  const pgDir = state.pgDir ?? path.join(dataDir, 'pg');
  const lines = (await readFile(path.join(pgDir, 'postmaster.pid'), 'utf8')).split('\n');
  return { pid: Number(lines[0]), port: Number(lines[3]) };
}
