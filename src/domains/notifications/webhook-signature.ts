import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks (standardwebhooks.com, "Signature scheme"): the secret is `whsec_` and the
 * base64 of random bytes; each request carries `webhook-id`, `webhook-timestamp` (Unix seconds)
 * and `webhook-signature`, `v1,` and the base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`
 * keyed with the secret's decoded bytes.
 */
const PREFIX = 'whsec_';

/** 32 random bytes: inside the specification's 24–64. */
export function generateSigningSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

export function signatureOf(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(
    secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret,
    'base64',
  );
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt; the timestamp is the attempt's, the id the delivery's. */
export function signedHeaders(
  secret: string,
  id: string,
  at: Date,
  body: string,
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureOf(secret, id, timestamp, body),
  };
}
