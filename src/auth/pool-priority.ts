import { readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';

/** How far below the event loop the hashing threads run (nice, 0–19). */
const POOL_NICENESS = 10;

/**
 * Puts libuv's pool threads (where argon2 computes) below the event loop in the CPU
 * scheduler, so that when hashes fill every core the loop is still scheduled first and
 * /healthz, the API and the stream writers stay responsive; hashing gets every cycle the loop
 * leaves. Linux lets setpriority name one thread by its id; elsewhere, or when /proc cannot
 * be read, nothing changes. Returns how many threads were lowered.
 */
export function lowerPoolPriority(): number {
  let lowered = 0;
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  for (const task of tasks) {
    try {
      if (readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim() !== 'libuv-worker') continue;
      setPriority(Number(task), POOL_NICENESS);
      lowered++;
    } catch {
      // A thread that ended meanwhile, or a platform without per-thread priorities.
    }
  }
  return lowered;
}
