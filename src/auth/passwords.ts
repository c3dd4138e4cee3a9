import { randomBytes, randomInt } from 'node:crypto';
import { hash as argon2Hash, verify as argon2Verify, parseOptions } from '@node-rs/argon2';

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

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(stored: string, password: string): Promise<VerifyResult>;
  /** Spends the same work as a real verify, for accounts that do not exist. */
  verifyDummy(password: string): Promise<void>;
  inFlight(): number;
}

/**
 * Each argon2id computation holds 64 MiB, so at most `concurrency` run at once and at most
 * `queue` more wait; beyond that callers get HasherBusyError instead of memory growth. The
 * places are first come, first served; sharing them fairly between clients is the HTTP
 * layer's job (HASHES_PER_ADDRESS in src/http/auth/routes.ts).
 */
export function createPasswordHasher(options: {
  concurrency: number;
  queue: number;
  params?: HashParams;
}): PasswordHasher {
  const params = options.params ?? PASSWORD_PARAMS;
  let running = 0;
  const waiting: (() => void)[] = [];

  async function slot<T>(work: () => Promise<T>): Promise<T> {
    if (running >= options.concurrency) {
      if (waiting.length >= options.queue)
        throw new HasherBusyError('password hashing is saturated');
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else {
      running++;
    }
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  }

  const hash = (password: string) =>
    slot(() =>
      argon2Hash(password, { ...params, algorithm: ARGON2ID, salt: randomBytes(SALT_BYTES) }),
    );
  let dummy: Promise<string> | undefined;

  return {
    hash,
    async verify(stored, password) {
      const ok = await slot(() => argon2Verify(stored, password));
      return { ok, needsRehash: ok && !sameParams(stored, params) };
    },
    async verifyDummy(password) {
      dummy ??= hash(randomBytes(18).toString('base64url'));
      const stored = await dummy;
      await slot(() => argon2Verify(stored, password));
    },
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
