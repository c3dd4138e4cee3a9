import { randomBytes, randomInt } from 'node:crypto';
import { hash as argon2Hash, verify as argon2Verify, parseOptions } from '@node-rs/argon2';
import { lowerPoolPriority } from './pool-priority.ts';

/** Spec §5.4 item 1. The stored PHC string carries these, so old hashes stay verifiable. */
export interface HashParams {
  memoryCost: number;
  timeCost: number;
  parallelism: number;
  outputLen: number;
}
export const PASSWORD_PARAMS: HashParams = {
  memoryCost: 65536,
  timeCost: 3,
  parallelism: 4,
  outputLen: 32,
};
const SALT_BYTES = 16;
// @node-rs/argon2 declares Algorithm as a const enum, which isolated modules cannot import.
const ARGON2ID = 2;

export const MIN_PASSWORD_LENGTH = 12;
/** Bounds hashing cost per request; far above any passphrase a person types. */
export const MAX_PASSWORD_LENGTH = 1024;

/** Length in Unicode code points, so a passphrase in any script counts as a person sees it. */
export function passwordLength(password: string): number {
  return [...password].length;
}

export class HasherBusyError extends Error {
  override name = 'HasherBusyError';
}

export interface VerifyResult {
  ok: boolean;
  /** The stored hash used other parameters than PASSWORD_PARAMS and should be replaced. */
  needsRehash: boolean;
}

/**
 * Which queue a sign-in waits in: `device` for an attempt carrying a valid device cookie of
 * the account it names (src/auth/device-cookie.ts), served before every `anonymous` waiter
 * and bounded separately, so a flood of anonymous attempts cannot keep it out.
 */
export type HashLane = 'device' | 'anonymous';

/**
 * A place held in the hasher's bound from before an attempt's database lookup until it ends:
 * a flood is refused before it costs a query, not after. Its hashes run in its lane.
 */
export interface HashPlace {
  verify(stored: string, password: string): Promise<VerifyResult>;
  verifyDummy(password: string): Promise<void>;
  hash(password: string): Promise<string>;
  release(): void;
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(stored: string, password: string): Promise<VerifyResult>;
  /** Spends the same work as a real verify, for accounts that do not exist. */
  verifyDummy(password: string): Promise<void>;
  /** Holds a place in `lane`, or throws HasherBusyError when that lane is full. */
  reserve(lane: HashLane): HashPlace;
  /** Whether `lane` would admit one more attempt now. */
  admits(lane: HashLane): boolean;
  inFlight(): number;
}

/**
 * Each argon2id computation holds 64 MiB, so at most `concurrency` run at once and at most
 * `queue` more wait (or hold a reserved place); beyond that callers get HasherBusyError
 * instead of memory growth. Anonymous places are first come, first served; sharing them
 * fairly between clients is the HTTP layer's job (HASHES_PER_ADDRESS in
 * src/http/auth/routes.ts). The device lane has its own `deviceQueue` places and is served
 * first whenever a computation ends, so a trusted device waits for at most one hash to end.
 */
export function createPasswordHasher(options: {
  concurrency: number;
  queue: number;
  /** Places of the device lane; default `queue`. */
  deviceQueue?: number;
  params?: HashParams;
}): PasswordHasher {
  const params = options.params ?? PASSWORD_PARAMS;
  const bound: Record<HashLane, number> = {
    anonymous: options.queue,
    device: options.deviceQueue ?? options.queue,
  };
  let running = 0;
  const waiting: Record<HashLane, (() => void)[]> = { device: [], anonymous: [] };
  /** Reserved places not computing right now, per lane. */
  const held: Record<HashLane, number> = { device: 0, anonymous: 0 };

  /** A lane admits its bound plus whatever computing slots are free right now. */
  const admits = (lane: HashLane) =>
    held[lane] + waiting[lane].length < bound[lane] + Math.max(0, options.concurrency - running);
  function admit(lane: HashLane): void {
    if (!admits(lane)) throw new HasherBusyError('password hashing is saturated');
  }

  let poolLowered = false;
  async function slot<T>(lane: HashLane, work: () => Promise<T>): Promise<T> {
    if (running >= options.concurrency) {
      await new Promise<void>((resolve) => waiting[lane].push(resolve));
    } else {
      running++;
    }
    try {
      return await work();
    } finally {
      // The pool's threads exist once the first hash has run (libuv starts them together).
      if (!poolLowered) poolLowered = lowerPoolPriority() > 0 || process.platform !== 'linux';
      // The slot passes straight to the next waiter, device lane first.
      const next = waiting.device.shift() ?? waiting.anonymous.shift();
      if (next) next();
      else running--;
    }
  }

  const argon2 = (password: string) =>
    argon2Hash(password, { ...params, algorithm: ARGON2ID, salt: randomBytes(SALT_BYTES) });
  let dummy: Promise<string> | undefined;
  // Made once, outside the bound (a caller already holds a place); forgotten if it failed,
  // so one failure cannot fail every later unknown-email attempt.
  const dummyHash = () => {
    dummy ??= argon2(randomBytes(18).toString('base64url')).catch((error: unknown) => {
      dummy = undefined;
      throw error;
    });
    return dummy;
  };

  /** A call without a reserved place: admitted as one, held only while it waits and runs. */
  async function unreserved<T>(work: () => Promise<T>): Promise<T> {
    admit('anonymous');
    return slot('anonymous', work);
  }

  function placeIn(lane: HashLane): HashPlace {
    admit(lane);
    held[lane]++;
    let released = false;
    /** While it computes the place is `running` (or `waiting`), not `held`. */
    const run = async <T>(work: () => Promise<T>): Promise<T> => {
      if (released) throw new Error('hash place used after release');
      held[lane]--;
      try {
        return await slot(lane, work);
      } finally {
        held[lane]++;
      }
    };
    return {
      async verify(stored, password) {
        const ok = await run(() => argon2Verify(stored, password));
        return { ok, needsRehash: ok && !sameParams(stored, params) };
      },
      async verifyDummy(password) {
        const stored = await dummyHash();
        await run(() => argon2Verify(stored, password));
      },
      hash: (password) => run(() => argon2(password)),
      release() {
        if (released) return;
        released = true;
        held[lane]--;
      },
    };
  }

  return {
    hash: (password) => unreserved(() => argon2(password)),
    async verify(stored, password) {
      const ok = await unreserved(() => argon2Verify(stored, password));
      return { ok, needsRehash: ok && !sameParams(stored, params) };
    },
    async verifyDummy(password) {
      const stored = await dummyHash();
      await unreserved(() => argon2Verify(stored, password));
    },
    reserve: placeIn,
    admits,
    inFlight: () => running,
  };
}

function sameParams(stored: string, params: HashParams): boolean {
  try {
    const parsed = parseOptions(stored);
    return (
      parsed.algorithm === ARGON2ID &&
      parsed.memoryCost === params.memoryCost &&
      parsed.timeCost === params.timeCost &&
      parsed.parallelism === params.parallelism &&
      parsed.outputLen === params.outputLen
    );
  } catch {
    return false;
  }
}

const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

/** 24 characters from a 57-symbol alphabet without look-alikes: about 140 bits. */
export function generatePassword(length = 24): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}
