import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A bench process of its own (node --import tsx), driven by request/reply over its IPC channel. */
export interface Child {
  readonly process: ChildProcess;
  /** Sends `message` and resolves with the first answer of type `reply` (or rejects on 'error'). */
  ask<T>(message: Record<string, unknown>, reply: string): Promise<T>;
  /** Asks it to stop and waits for it to exit (SIGKILL after a grace period). */
  stop(): Promise<void>;
}

const STOP_GRACE_MS = 10_000;

export function forkChild(file: string, name: string): Child {
  const child = fork(fileURLToPath(new URL(file, import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => {
      exitCode = code;
      reject(new Error(`${name} exited with ${code}`));
    }),
  );
  exited.catch(() => undefined);
  const ask = <T>(message: Record<string, unknown>, reply: string) =>
    Promise.race([
      exited,
      new Promise<T>((resolve, reject) => {
        const onMessage = (answer: { type: string; message?: string }) => {
          if (answer.type !== reply && answer.type !== 'error') return;
          child.off('message', onMessage);
          if (answer.type === 'error') reject(new Error(`${name}: ${answer.message}`));
          else resolve(answer as T);
        };
        child.on('message', onMessage);
        child.send(message);
      }),
    ]);
  const stop = async () => {
    if (exitCode !== undefined) return;
    const gone = exited.catch(() => undefined);
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    if (child.connected) child.send({ type: 'stop' });
    else child.kill('SIGTERM');
    await gone;
    clearTimeout(timer);
  };
  return { process: child, ask, stop };
}

/** The child side: answers each message with `handle`'s reply, or an 'error' reply. */
export function serveParent(
  handle: (message: { type: string } & Record<string, unknown>) => Promise<Record<string, unknown>>,
): void {
  // An interrupted parent (Ctrl-C) must not leave replicas and client processes behind.
  process.on('disconnect', () => process.exit(0));
  process.on('message', (message: { type: string } & Record<string, unknown>) => {
    handle(message).then(
      (answer) => process.send?.(answer),
      (error: unknown) =>
        process.send?.({
          type: 'error',
          message: error instanceof Error ? error.stack : String(error),
        }),
    );
  });
}
