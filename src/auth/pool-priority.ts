import { readdirSync, readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** How far below the event loop the hashing threads run, in nice steps (nice is 0–19). */
export const POOL_NICE_STEP = 10;

/**
 * The nice value the pool threads get: the loop's own plus the step, at most 19. Relative,
 * because svc may itself be started niced (an operator's `nice svc serve`, a CI runner): an
 * absolute 10 would then put the hashes level with the loop, or above it.
 */
export const poolNiceFor = (loopNice: number) => Math.min(19, loopNice + POOL_NICE_STEP);

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
  const target = poolNiceFor(getPriority());
  for (const task of tasks) {
    try {
      if (readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim() !== 'libuv-worker') continue;
      setPriority(Number(task), target);
      lowered++;
    } catch {
      // A thread that ended meanwhile, or a platform without per-thread priorities.
    }
  }
  return lowered;
}
