import { createHmac, hkdfSync, randomBytes, timingSafeEqual, webcrypto } from 'node:crypto';

/**
 * Device cookies (OWASP, "Slow Down Online Guessing Attacks with Device Cookies"): a browser
 * that signed in to an account before carries a signed cookie naming that account, and its
 * next sign-in to the same account is admitted ahead of anonymous attempts and outside the
 * per-address limits, so a flood from many addresses cannot lock its owner out. Each cookie
 * has its own small failure budget; once spent, the cookie is ordinary (anonymous) for the
 * rest of the window. The cookie grants nothing else: the password is still checked.
 */
export const DEVICE_COOKIE = 'svc_device';
/** One year: a device is remembered across the sessions of a normal working year. */
export const DEVICE_COOKIE_MAX_AGE_S = 365 * 24 * 60 * 60;
/** Failed sign-ins one device cookie may make per window before it stops being trusted. */
export const DEVICE_FAILURE_LIMIT = 5;
export const DEVICE_FAILURE_WINDOW_MS = 15 * 60 * 1000;
/** Cookies whose failures are remembered at once; beyond that a new one is not trusted. */
export const DEVICE_FAILURE_CAPACITY = 100_000;
/** A cookie longer than this is not parsed at all (an email is at most 254 characters). */
const MAX_COOKIE_CHARS = 1024;
/** Labels the key derivation, so the device key can never equal another svc key. */
const KEY_LABEL = 'svc device cookie v1';

interface Payload {
  /** The normalised email the cookie was issued to. */
  sub: string;
  /** 16 random bytes, base64url: names this device for its failure budget. */
  n: string;
  /** Issued at, seconds since the epoch. */
  iat: number;
}

export interface TrustedDevice {
  nonce: string;
}

export interface DeviceCookies {
  /** A new cookie value for `email` (already normalised). */
  issue(email: string): string;
  /**
   * The device a cookie value stands for when it is genuine, unexpired, issued to `email`
   * (normalised) and has failures left; otherwise undefined and the attempt is anonymous.
   */
  trusted(value: string | undefined, email: string): TrustedDevice | undefined;
  /** Counts a failed sign-in of this device against its budget. */
  failed(device: TrustedDevice): void;
  /** The Set-Cookie header for a value. */
  header(value: string): string;
}

/**
 * The HMAC key, derived from the JWT signing key without reusing it: Ed25519 signatures are
 * deterministic (RFC 8032), so the signature over a fixed label is a secret only the key's
 * holder can compute, the same on every replica sharing the key; HKDF-SHA-256 turns it into
 * the 32-byte HMAC key. The private key itself stays non-extractable.
 */
export async function deriveDeviceKey(signingKey: webcrypto.CryptoKey): Promise<Buffer> {
  const label = new TextEncoder().encode(KEY_LABEL);
  const secret = await webcrypto.subtle.sign('Ed25519', signingKey, label);
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret), Buffer.alloc(0), label, 32));
}

export function createDeviceCookies(options: {
  key: Buffer;
  now: () => Date;
  failureLimit?: number;
  windowMs?: number;
  capacity?: number;
}): DeviceCookies {
  const {
    key,
    now,
    failureLimit = DEVICE_FAILURE_LIMIT,
    windowMs = DEVICE_FAILURE_WINDOW_MS,
    capacity = DEVICE_FAILURE_CAPACITY,
  } = options;
  const sign = (body: string) => createHmac('sha256', key).update(body).digest();
  /** Failures per device nonce in the current window; Map order is the order windows opened. */
  const failures = new Map<string, { start: number; count: number }>();

  function dropEnded(at: number) {
    for (const [nonce, window] of failures) {
      if (at - window.start < windowMs) return;
      failures.delete(nonce);
    }
  }

  function parse(value: string): Payload | undefined {
    if (value.length > MAX_COOKIE_CHARS) return undefined;
    const [body, signature, extra] = value.split('.');
    if (!body || !signature || extra !== undefined) return undefined;
    const given = Buffer.from(signature, 'base64url');
    const expected = sign(body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
      if (typeof payload.sub !== 'string' || typeof payload.n !== 'string') return undefined;
      if (!Number.isInteger(payload.iat)) return undefined;
      return payload;
    } catch {
      return undefined;
    }
  }

  return {
    issue(email) {
      const payload: Payload = {
        sub: email,
        n: randomBytes(16).toString('base64url'),
        iat: Math.floor(now().getTime() / 1000),
      };
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      return `${body}.${sign(body).toString('base64url')}`;
    },
    trusted(value, email) {
      if (!value) return undefined;
      const payload = parse(value);
      if (!payload || payload.sub !== email) return undefined;
      const at = now().getTime();
      const age = at / 1000 - payload.iat;
      // A minute of clock difference between replicas is tolerated, not a cookie from later.
      if (age > DEVICE_COOKIE_MAX_AGE_S || age < -60) return undefined;
      dropEnded(at);
      const window = failures.get(payload.n);
      if (window && window.count >= failureLimit) return undefined;
      // Fail closed: with the budget table full of live windows a new device is not trusted.
      if (!window && failures.size >= capacity) return undefined;
      return { nonce: payload.n };
    },
    failed({ nonce }) {
      const at = now().getTime();
      dropEnded(at);
      const window = failures.get(nonce);
      if (window) window.count++;
      else if (failures.size < capacity) failures.set(nonce, { start: at, count: 1 });
    },
    header: (value) =>
      `${DEVICE_COOKIE}=${value}; Max-Age=${DEVICE_COOKIE_MAX_AGE_S}; Path=/api/auth; HttpOnly; Secure; SameSite=Strict`,
  };
}
