import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { BenchTenant } from './app.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Started ten at a time: a start costs ~2 s of CPU (tsx and svc's whole CLI), so all 50 at
 * once would only slow each down, and the start timeout must survive a loaded machine.
 */
const START_PARALLEL = 10;
const START_TIMEOUT_MS = 180_000;

/** One running `svc adapter` and its parsed stdout (test/support/adapter-process.ts, lighter). */
export interface AdapterProcess {
  child: ChildProcess;
  logs(): Record<string, unknown>[];
  waitForLog(
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs: number,
  ): Promise<void>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** The node binary itself (not npm), running svc's CLI as the image's `svc adapter` does. */
function spawnAdapter(env: Record<string, string>): AdapterProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'adapter'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    const parts = (partial + d.toString('utf8')).split('\n');
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
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    logs: () => lines,
    async waitForLog(predicate, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!lines.some(predicate)) {
        if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline)
          throw new Error(
            `adapter ${child.pid}: expected log line not seen (exit ${child.exitCode}):\n` +
              `${lines.map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`,
          );
        await sleep(50);
      }
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** The ingest loop's first line once svc answered the checkpoint read (src/adapter). */
const READY = new Set([
  'no checkpoint yet: reading from the oldest alert',
  'resuming after the stored checkpoint',
]);

export interface Adapters {
  processes: AdapterProcess[];
  pids(): number[];
  /** Σ and max of the kernel's VmHWM over the running adapters, bytes. */
  peakMemory(): { sum: number; max: number; read: number };
  stop(): Promise<void>;
  /** Synchronous, for signal handlers: SIGKILL every adapter still running. */
  kill(): void;
}

function vmHwm(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kib = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kib === undefined ? undefined : Number(kib) * 1024;
  } catch {
    return undefined;
  }
}

/**
 * One real `svc adapter` OS process per tenant (node itself, no npm in between), with the
 * chart's environment pointed at svc and the bench's OpenSearch node, each on its tenant's
 * index pattern. Only the health server's address differs from production (loopback, any free
 * port: 50 share one host), and the indexer is plain HTTP without credentials (bench/ingest/
 * opensearch.ts says why). Poll interval, batch size, lateness window and heartbeat are the
 * program's defaults unless `extra` says otherwise.
 */
export async function startAdapters(input: {
  tenants: BenchTenant[];
  apiUrl: string;
  /** Each tenant's indexer: its URL and the index pattern its adapter reads. */
  indexerOf: (tenant: BenchTenant) => { url: string; index: string };
  extra: Record<string, string>;
  /** Each adapter is handed over as soon as it runs, so a failure later can still kill it. */
  track: (adapter: AdapterProcess) => void;
}): Promise<Adapters> {
  const processes: AdapterProcess[] = [];
  const queue = [...input.tenants];
  const worker = async () => {
    for (let tenant = queue.shift(); tenant; tenant = queue.shift()) {
      const adapter = spawnAdapter({
        SVC_API_URL: input.apiUrl,
        SVC_TENANT_ID: tenant.id,
        SVC_BOOTSTRAP_DIR: tenant.mounts.bootstrapDir,
        SVC_TOKEN_FILE: tenant.mounts.tokenFile,
        SVC_INDEXER_URL: input.indexerOf(tenant).url,
        SVC_INDEXER_INDEX: input.indexerOf(tenant).index,
        SVC_ADAPTER_HOST: '127.0.0.1',
        SVC_ADAPTER_PORT: '0',
        SVC_LOG_LEVEL: 'info',
        ...input.extra,
      });
      input.track(adapter);
      processes.push(adapter);
      // Ready = svc answered its checkpoint read (bootstrap, token and heartbeat done).
      await adapter.waitForLog((l) => READY.has(String(l.msg)), START_TIMEOUT_MS);
    }
  };
  await Promise.all(Array.from({ length: START_PARALLEL }, worker));
  return {
    processes,
    pids: () => processes.flatMap((p) => (p.child.pid === undefined ? [] : [p.child.pid])),
    peakMemory() {
      const peaks = processes
        .map((p) => vmHwm(p.child.pid))
        .filter((v): v is number => v !== undefined);
      return {
        sum: peaks.reduce((a, b) => a + b, 0),
        max: Math.max(0, ...peaks),
        read: peaks.length,
      };
    },
    async stop() {
      await Promise.all(processes.map((p) => p.stop('SIGTERM')));
    },
    kill() {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    },
  };
}

/** Log lines at warn or above from any adapter (retries, refusals): printed, never expected. */
export function adapterWarnings(adapters: Adapters): string[] {
  const out: string[] = [];
  for (const p of adapters.processes)
    for (const line of p.logs())
      if (line.level === 'warn' || line.level === 'error' || line.level === 'fatal')
        out.push(`${line.level}: ${String(line.msg)}`);
  return out;
}
