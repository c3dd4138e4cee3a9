import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver on loopback, as a customer would run one: it checks every request against
 * the Standard Webhooks specification ("Verifying webhook authenticity"), written here from the
 * specification and not from svc's signer, so a shared mistake cannot pass.
 */
export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  contentType: string | undefined;
  /** The signature matched under the secret the test registered for this path. */
  verified: boolean;
  path: string;
}

export interface Answer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The secret requests to `path` must be signed with. */
  expect(path: string, secret: string): void;
  /** What the next requests get (in order); after the script, 200. */
  script(...answers: Answer[]): void;
  close(): Promise<void>;
}

/** Standard Webhooks: `v1,<base64 HMAC-SHA256>` over `id.timestamp.body`, key = base64 after `whsec_`. */
export function verifyStandardWebhook(
  secret: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  if (!secret.startsWith('whsec_')) return false;
  if (!/^\d+$/.test(headers.timestamp)) return false;
  // The specification's replay window: five minutes either way.
  if (Math.abs(nowSeconds - Number(headers.timestamp)) > 300) return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key)
    .update(`${headers.id}.${headers.timestamp}.${body}`, 'utf8')
    .digest();
  // The header may list several signatures, space-delimited, each `version,signature`.
  return headers.signature.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export async function startReceiver(host = '127.0.0.1'): Promise<Receiver> {
  const secrets = new Map<string, string>();
  const received: Received[] = [];
  let answers: Answer[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      const header = (name: string) => {
        const v = req.headers[name];
        return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
      };
      const signed = {
        id: header('webhook-id'),
        timestamp: header('webhook-timestamp'),
        signature: header('webhook-signature'),
      };
      const secret = secrets.get(path);
      received.push({
        ...signed,
        body,
        contentType: req.headers['content-type'],
        verified: secret !== undefined && verifyStandardWebhook(secret, signed, body),
        path,
      });
      const answer = answers.shift() ?? { status: 200, body: 'ok' };
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    received,
    expect: (path, secret) => secrets.set(path, secret),
    script: (...list) => {
      answers = list;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
