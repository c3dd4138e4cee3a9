import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';

export interface LlmProcess {
  /** The OpenAI-compatible base URL (`https://127.0.0.1:<port>/v1`). */
  baseUrl: string;
  /** The PEM file svc trusts for it (SVC_OUTBOUND_CA_FILE). */
  caFile: string;
  pid: number;
  stats(): Promise<{ requests: number; peakInFlight: number }>;
  close(): Promise<void>;
}

/** Starts bench/pipeline/llm-process.ts and waits until it listens. */
export async function startLlmProcess(options: {
  latencyMs: number;
  concurrency: number;
  caFile: string;
}): Promise<LlmProcess> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./llm-process.ts', import.meta.url).pathname],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        BENCH_LLM_LATENCY_MS: String(options.latencyMs),
        BENCH_LLM_CONCURRENCY: String(options.concurrency),
      },
    },
  );
  const ready = await new Promise<{ url: string; ca: string }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { url: string; ca: string }));
    child.once('exit', (code) =>
      reject(new Error(`the LLM stand-in process exited (${String(code)}) before it listened`)),
    );
  });
  await writeFile(options.caFile, ready.ca);
  return {
    baseUrl: ready.url,
    caFile: options.caFile,
    pid: child.pid ?? 0,
    async stats() {
      child.send('stats');
      const [reply] = (await once(child, 'message')) as [
        { requests: number; peakInFlight: number },
      ];
      return reply;
    },
    async close() {
      if (child.exitCode !== null) return;
      const gone = once(child, 'exit');
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await gone;
      clearTimeout(timer);
    },
  };
}
