import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A temp dir standing in for the kubelet's Secret volumes of the adapter pod
 * (charts/svc-tenant/templates/adapter.yaml): `bootstrap/` holds `tenant-id` and `credential`,
 * `token/` the `token` key of `svc-adapter-token`. Writes are atomic the way the kubelet makes
 * them: files live in a timestamped directory, `..data` is a symlink to it swapped by rename,
 * and each key is a symlink through `..data`.
 */
export interface SecretMounts {
  root: string;
  bootstrapDir: string;
  tokenFile: string;
  writeBootstrap(data: { 'tenant-id': string; credential: string }): Promise<void>;
  writeToken(token: string): Promise<void>;
  remove(): Promise<void>;
}

let generation = 0;

async function kubeletWrite(dir: string, data: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true });
  generation += 1;
  const stamp = `..${new Date().toISOString().replace(/[:.]/g, '_')}.${process.pid}.${generation}`;
  await mkdir(path.join(dir, stamp));
  for (const [key, value] of Object.entries(data)) {
    await writeFile(path.join(dir, stamp, key), value, { mode: 0o440 });
  }
  const tmp = path.join(dir, '..data_tmp');
  await rm(tmp, { force: true });
  await symlink(stamp, tmp);
  await rename(tmp, path.join(dir, '..data'));
  for (const key of Object.keys(data)) {
    await symlink(path.join('..data', key), path.join(dir, key)).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      },
    );
  }
}

/** Writes `data` as the files of a Secret volume mounted at `dir`, the kubelet's way (above). */
export function writeSecretVolume(dir: string, data: Record<string, string>): Promise<void> {
  return kubeletWrite(dir, data);
}

export async function createSecretMounts(): Promise<SecretMounts> {
  const root = await mkdtemp(path.join(tmpdir(), 'svc-adapter-mounts-'));
  const bootstrapDir = path.join(root, 'bootstrap');
  const tokenDir = path.join(root, 'token');
  await mkdir(bootstrapDir);
  await mkdir(tokenDir);
  return {
    root,
    bootstrapDir,
    tokenFile: path.join(tokenDir, 'token'),
    writeBootstrap: (data) => kubeletWrite(bootstrapDir, data),
    writeToken: (token) => kubeletWrite(tokenDir, { token }),
    remove: () => rm(root, { recursive: true, force: true }),
  };
}

export interface AdapterProcess {
  child: ChildProcess;
  /** The health server's port (from the "adapter running" log line). */
  port: number;
  /** Every stdout log line so far, parsed. */
  logs(): Record<string, unknown>[];
  stderr(): string;
  /** Resolves with the first log line matching, or throws after `timeoutMs`. */
  waitForLog(
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Sends the signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ExitedAdapter {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment the chart gives the adapter, pointed at local stand-ins. */
export function adapterEnv(input: {
  apiUrl: string;
  tenantId: string;
  indexerUrl: string;
  mounts?: SecretMounts;
  extra?: Record<string, string>;
}): Record<string, string> {
  return {
    SVC_API_URL: input.apiUrl,
    SVC_TENANT_ID: input.tenantId,
    SVC_INDEXER_URL: input.indexerUrl,
    ...(input.mounts
      ? { SVC_BOOTSTRAP_DIR: input.mounts.bootstrapDir, SVC_TOKEN_FILE: input.mounts.tokenFile }
      : {}),
    SVC_ADAPTER_HOST: '127.0.0.1',
    SVC_ADAPTER_PORT: '0',
    SVC_POLL_SECONDS: '0.2',
    SVC_HEARTBEAT_SECONDS: '0.5',
    SVC_LOG_LEVEL: 'info',
    ...input.extra,
  };
}

function spawnAdapter(env: Record<string, string>): ChildProcess {
  // The node binary itself (not npm), so a SIGKILL reaches the adapter and nothing else.
  return spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'adapter'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `svc adapter` to its exit (for settings it must refuse). */
export async function runAdapterToExit(env: Record<string, string>): Promise<ExitedAdapter> {
  const child = spawnAdapter(env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

/** Starts the real `svc adapter` OS process and waits until its health server listens. */
export async function startAdapter(env: Record<string, string>): Promise<AdapterProcess> {
  const child = spawnAdapter(env);
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    partial += d.toString('utf8');
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const part of parts) {
      try {
        lines.push(JSON.parse(part) as Record<string, unknown>);
      } catch {
        lines.push({ msg: part });
      }
    }
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );

  async function waitForLog(
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const found = lines.find(predicate);
      if (found) return found;
      if (child.exitCode !== null || child.signalCode !== null) break;
      await sleep(50);
    }
    throw new Error(
      `adapter log line not seen (exit ${child.exitCode}):\n${lines.map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`,
    );
  }

  // A process that never came up is not left behind for the test file to outlive.
  const running = await waitForLog((l) => l.msg === 'adapter running').catch((error) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    child,
    port: Number(running.port),
    logs: () => lines,
    stderr: () => stderr,
    waitForLog,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      // An adapter that does not finish its shutdown within the time its own requests may take
      // (15 s each) is killed, so a test's cleanup cannot hang the suite; the caller sees null.
      const killer = setTimeout(() => child.kill('SIGKILL'), 45_000);
      try {
        return await exited;
      } finally {
        clearTimeout(killer);
      }
    },
  };
}
