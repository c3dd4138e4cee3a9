import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A real `svc <command>` OS process (the node binary itself, so signals reach svc). */
export interface SvcProcess {
  name: string;
  child: ChildProcess;
  /** Its stdout, one parsed JSON log line each (a line that is not JSON as `{ msg }`). */
  logs: Record<string, unknown>[];
  /** Everything it wrote to stderr. */
  stderr(): string;
  /** Resolves when it has exited. */
  exited: Promise<void>;
  /** SIGKILL unless it has exited already; resolves once it is gone. */
  kill(): Promise<void>;
}

export interface SvcProcessOptions {
  command: 'serve' | 'worker' | 'orchestrator';
  /** The whole environment (nothing is inherited that is not in it). */
  env: NodeJS.ProcessEnv;
  /** The log line that says it runs. */
  ready: (line: Record<string, unknown>) => boolean;
  name?: string;
  timeoutMs?: number;
}

/** Starts the process and waits until `ready` sees a line; a process that exits first fails it. */
export async function startSvcProcess(options: SvcProcessOptions): Promise<SvcProcess> {
  const name = options.name ?? `svc ${options.command}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', options.command], {
    cwd: ROOT,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let partial = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    partial += d.toString('utf8');
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const svc: SvcProcess = {
    name,
    child,
    logs,
    stderr: () => stderr,
    exited,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const describe = () => `${logs.map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`;
  for (;;) {
    if (logs.some(options.ready)) return svc;
    if (child.exitCode !== null || child.signalCode !== null) {
      await svc.kill();
      throw new Error(
        `${name} exited (${child.exitCode ?? child.signalCode}) before it ran:\n${describe()}`,
      );
    }
    if (Date.now() > deadline) {
      await svc.kill();
      throw new Error(
        `${name} not running within ${options.timeoutMs ?? 60_000} ms:\n${describe()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
