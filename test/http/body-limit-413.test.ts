import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { DRAIN_MAX_BYTES, MAX_BODY_BYTES } from '../../src/http/body-limit.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * Issue 27 item 4, from the careless client's side: a client that sends its whole oversized
 * body without looking at the answer first must still read the 413, not die on a reset.
 */

let db: TestDatabase;
let api: TestApi;
let port: number;
let cookie: string;

const PASSWORD = 'correct horse battery staple';
const MiB = 1024 * 1024;
const ADMIN = `admin-${randomUUID()}@example.test`;
const ANALYST = `analyst-${randomUUID()}@example.test`;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  port = Number(new URL(api.url).port);
  await seedUser(db, api.hasher, { email: ADMIN, role: 'platform_admin', password: PASSWORD });
  await seedUser(db, api.hasher, { email: ANALYST, role: 'analyst', password: PASSWORD });
  const browser = client(api);
  assert.equal((await browser.login(ADMIN, PASSWORD)).status, 200);
  cookie = browser.cookie() ?? '';
});
after(async () => {
  await api.close();
  await db.drop();
});

/** What came back on one connection, parsed from the raw bytes. */
interface RawAnswer {
  /** Status codes in order, interim (100) ones included. */
  statuses: number[];
  headers: Record<string, string>;
  body: string;
  /** The client's socket error, if any (EPIPE / ECONNRESET is the bug). */
  error: string | undefined;
  /** Body bytes the client got onto the socket. */
  written: number;
}

/** Splits raw HTTP/1.1 responses (content-length bodies only, as svc's problems have). */
function parseResponses(raw: Buffer): Omit<RawAnswer, 'error' | 'written'> {
  const statuses: number[] = [];
  let headers: Record<string, string> = {};
  let body = '';
  let rest = raw.toString('latin1');
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const [line = '', ...fields] = rest.slice(0, end).split('\r\n');
    statuses.push(Number(line.split(' ')[1]));
    headers = {};
    for (const f of fields) {
      const colon = f.indexOf(':');
      headers[f.slice(0, colon).trim().toLowerCase()] = f.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    body = rest.slice(end + 4, end + 4 + length);
    rest = rest.slice(end + 4 + length);
  }
  return { statuses, headers, body: Buffer.from(body, 'latin1').toString('utf8') };
}

/** A JSON document padded with whitespace to `size` bytes: valid JSON, just too large. */
function paddedJson(json: unknown, size: number): Buffer {
  const text = JSON.stringify(json);
  const body = Buffer.alloc(size, ' ');
  body.write(text, 0, 'utf8');
  return body;
}

interface Send {
  path: string;
  body: Buffer;
  chunked: boolean;
  headers?: Record<string, string>;
}

/**
 * The careless client: one connection, the request head and the whole body handed to the
 * socket at once (64 KiB chunks when chunked), before it reads anything; then it reads whatever
 * answer comes and closes when the server does. Half-open allowed, so that only the server can
 * cut the upload short (Node's default would end the client's side on the server's FIN).
 */
function carelessUpload({ path, body, chunked, headers = {} }: Send): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const received: Buffer[] = [];
    let error: string | undefined;
    let written = 0;
    socket.on('data', (d: Buffer) => received.push(d));
    socket.on('end', () => socket.end());
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () =>
      resolve({ ...parseResponses(Buffer.concat(received)), error, written }),
    );
    const head = [
      `POST ${path} HTTP/1.1`,
      'host: 127.0.0.1',
      `origin: ${api.origin}`,
      'content-type: application/json',
      chunked ? 'transfer-encoding: chunked' : `content-length: ${body.length}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    socket.write(`${head.join('\r\n')}\r\n\r\n`);
    if (!chunked) {
      socket.write(body);
    } else {
      for (let at = 0; at < body.length; at += 64 * 1024) {
        const part = body.subarray(at, at + 64 * 1024);
        socket.write(`${part.length.toString(16)}\r\n`);
        socket.write(part);
        socket.write('\r\n');
      }
      socket.write('0\r\n\r\n');
    }
    written = body.length;
  });
}

function assertProblem413(answer: RawAnswer, what: string): void {
  assert.equal(answer.error, undefined, `${what}: the client's upload failed`);
  assert.deepEqual(answer.statuses, [413], `${what}: statuses`);
  assert.equal(answer.headers['content-type'], 'application/problem+json', what);
  assert.equal(answer.headers.connection, 'close', `${what}: the connection is not reused`);
  const problem = JSON.parse(answer.body) as { code?: string; status?: number };
  assert.deepEqual([problem.status, problem.code], [413, 'payload_too_large'], what);
}

async function userCount(email: string): Promise<number> {
  const rows = await db.pools.mssp.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM users WHERE email = $1',
    [email],
  );
  return rows.rows[0]?.n ?? -1;
}

async function auditCount(): Promise<number> {
  const rows = await db.pools.mssp.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log');
  return rows.rows[0]?.n ?? -1;
}

test('issue 27 item 4: a careless client sending 10 MB to sign-in, user creation and the adapter bootstrap reads its 413, Content-Length and chunked', async () => {
  const victim = `never-${randomUUID()}@example.test`;
  const size = 10 * 1000 * 1000;
  const targets: [string, Buffer, Record<string, string>][] = [
    ['/api/auth/login', paddedJson({ email: ANALYST, password: PASSWORD }, size), {}],
    ['/api/mssp/users', paddedJson({ email: victim, role: 'analyst' }, size), { cookie }],
    [
      '/api/internal/adapter/bootstrap',
      paddedJson({ tenant_id: randomUUID(), credential: 'x'.repeat(40) }, size),
      {},
    ],
  ];
  const transactions = api.transactions();
  const audits = await auditCount();
  for (const [path, body, headers] of targets) {
    for (const chunked of [false, true]) {
      const what = `${path} ${chunked ? 'chunked' : 'with Content-Length'}`;
      assertProblem413(await carelessUpload({ path, body, chunked, headers }), what);
    }
  }
  assert.equal(api.transactions(), transactions, 'no refused request reached the database');
  assert.equal(await userCount(victim), 0, 'no user was created');
  assert.equal(await auditCount(), audits, 'no audit row was written');
  // The same user creation under the limit goes through: the refusal above was the size alone.
  const small = await carelessUpload({
    path: '/api/mssp/users',
    body: paddedJson({ email: victim, role: 'analyst' }, 1000),
    chunked: true,
    headers: { cookie, connection: 'close' },
  });
  assert.deepEqual([small.error, small.statuses], [undefined, [201]]);
  assert.equal(await userCount(victim), 1);
});

test('issue 27 item 4: the drain after a 413 is bounded: a 200 MB upload is cut off after the cap, with the 413 already read', async (t) => {
  // A client that keeps writing (in 64 KiB steps, waiting for the socket) until the server
  // stops it: the server's FIN after the 413 does not stop it, only the cut-off's reset does.
  const run = (chunked: boolean) =>
    new Promise<RawAnswer>((resolve) => {
      const total = 200 * 1000 * 1000;
      const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      const received: Buffer[] = [];
      let error: string | undefined;
      let written = 0;
      socket.on('data', (d: Buffer) => received.push(d));
      socket.on('error', (e: NodeJS.ErrnoException) => {
        error = e.code ?? e.message;
      });
      socket.on('close', () =>
        resolve({ ...parseResponses(Buffer.concat(received)), error, written }),
      );
      socket.write(
        [
          'POST /api/auth/login HTTP/1.1',
          'host: 127.0.0.1',
          'content-type: application/json',
          chunked ? 'transfer-encoding: chunked' : `content-length: ${total}`,
          '',
          '',
        ].join('\r\n'),
      );
      const chunk = Buffer.alloc(64 * 1024, ' ');
      const frame = chunked
        ? Buffer.concat([
            Buffer.from(`${chunk.length.toString(16)}\r\n`),
            chunk,
            Buffer.from('\r\n'),
          ])
        : chunk;
      const pump = () => {
        while (!error && !socket.destroyed && written < total) {
          written += chunk.length;
          if (!socket.write(frame)) {
            socket.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
  for (const chunked of [false, true]) {
    const what = chunked ? 'chunked' : 'with Content-Length';
    const answer = await run(chunked);
    t.diagnostic(`${what}: ${(answer.written / MiB).toFixed(1)} MiB written before the cut-off`);
    assert.deepEqual(answer.statuses, [413], `${what}: the 413 was read before the cut-off`);
    assert.equal(JSON.parse(answer.body).code, 'payload_too_large', what);
    assert.ok(answer.error !== undefined, `${what}: the upload was cut off`);
    // The server read and dropped at least the cap (it drained), and stopped soon after it:
    // what else got onto the socket is only the two kernels' buffers.
    assert.ok(answer.written >= DRAIN_MAX_BYTES, `${what}: wrote only ${answer.written} bytes`);
    assert.ok(
      answer.written < MAX_BODY_BYTES + DRAIN_MAX_BYTES + 48 * MiB,
      `${what}: wrote ${answer.written} bytes, the drain did not stop at ${DRAIN_MAX_BYTES}`,
    );
  }
  assert.equal((await fetch(`${api.url}/healthz`)).status, 200, 'the server is fine afterwards');
});

test('issue 27 item 4: Expect: 100-continue with a Content-Length over the limit gets 413, not 100 Continue', async () => {
  const exchange = (length: number, body: string) =>
    new Promise<{ first: number; statuses: number[] }>((resolve) => {
      const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      const received: Buffer[] = [];
      let first = 0;
      socket.on('data', (d: Buffer) => {
        received.push(d);
        if (first !== 0) return;
        // A well-behaved client: it sends the body only after 100 Continue.
        first = Number(Buffer.concat(received).toString('latin1').split(' ')[1]);
        if (first === 100) socket.write(body);
      });
      socket.on('end', () => socket.end());
      socket.on('error', () => {});
      socket.on('close', () =>
        resolve({ first, statuses: parseResponses(Buffer.concat(received)).statuses }),
      );
      socket.write(
        [
          'POST /api/auth/login HTTP/1.1',
          'host: 127.0.0.1',
          `origin: ${api.origin}`,
          'content-type: application/json',
          `content-length: ${length}`,
          'expect: 100-continue',
          'connection: close',
          '',
          '',
        ].join('\r\n'),
      );
    });
  const refused = await exchange(10 * 1000 * 1000, '');
  assert.equal(refused.first, 413, 'the refusal is the first answer');
  assert.deepEqual(refused.statuses, [413]);
  // Under the limit the body is asked for and read.
  const body = JSON.stringify({ email: ANALYST, password: 'wrong password' });
  const accepted = await exchange(Buffer.byteLength(body), body);
  assert.deepEqual(accepted.statuses, [100, 401]);
});

test('issue 27 item 4: a request pipelined behind a refused body is not served', async () => {
  // A chunked body just over the limit, complete, then a valid sign-in on the same connection:
  // the drain reads past the refused body, but nothing after it is handled.
  const login = JSON.stringify({ email: ANALYST, password: PASSWORD });
  const over = Buffer.alloc(MAX_BODY_BYTES + 1, ' ');
  const transactions = api.transactions();
  const answer = await new Promise<RawAnswer>((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const received: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (d: Buffer) => received.push(d));
    socket.on('end', () => socket.end());
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code;
    });
    socket.on('close', () =>
      resolve({ ...parseResponses(Buffer.concat(received)), error, written: 0 }),
    );
    const head = (extra: string) =>
      `POST /api/auth/login HTTP/1.1\r\nhost: 127.0.0.1\r\norigin: ${api.origin}\r\ncontent-type: application/json\r\n${extra}\r\n\r\n`;
    socket.write(head('transfer-encoding: chunked'));
    socket.write(`${over.length.toString(16)}\r\n`);
    socket.write(over);
    socket.write('\r\n0\r\n\r\n');
    socket.write(head(`content-length: ${Buffer.byteLength(login)}`) + login);
  });
  assert.deepEqual(answer.statuses, [413], 'only the refusal was answered');
  assert.equal(api.transactions(), transactions, 'the pipelined sign-in never ran');
});
