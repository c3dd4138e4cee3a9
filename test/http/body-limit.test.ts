import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { MAX_BODY_BYTES } from '../../src/http/body-limit.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let cookie: string;

const PASSWORD = 'correct horse battery staple';
const MiB = 1024 * 1024;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  const email = `body-limit-${randomUUID()}@example.test`;
  await seedUser(db, api.hasher, { email, role: 'analyst', password: PASSWORD });
  const browser = client(api);
  assert.equal((await browser.login(email, PASSWORD)).status, 200);
  cookie = browser.cookie() ?? '';
});
after(async () => {
  await api.close();
  await db.drop();
});

/**
 * Resident set size of this process (server and client), sampled at every step of an upload
 * (each write the socket accepts, and the answer) rather than on a timer.
 */
let peakRss = 0;
function sampleRss(): void {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}

/**
 * Refused at the limit: 413 payload_too_large with Connection: close, or (under load) the reset
 * of that same closed connection reaching the still-writing client before the answer did.
 */
function refusedAtLimit(answer: Answer, what: string): void {
  if (answer.status === 0) assert.equal(answer.code, 'reset', what);
  else assert.deepEqual([answer.status, answer.code], [413, 'payload_too_large'], what);
  assert.equal(answer.connection, 'close', `${what}: the rest of the upload is not read`);
}

interface Answer {
  status: number;
  code: string | undefined;
  connection: string | undefined;
  /** Body bytes the client got onto the socket before the answer arrived. */
  written: number;
}

/**
 * An attacker's upload: `total` bytes of JSON whitespace in 64 KiB writes, chunked unless a
 * Content-Length is given, that keeps sending until the server answers (and ignores the write
 * errors once it has). One reused buffer, so the client itself holds almost nothing.
 */
function upload(
  method: string,
  path: string,
  total: number,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let written = 0;
    let answered = false;
    const req = http.request(`${api.url}${path}`, {
      method,
      agent: false,
      headers: { origin: api.origin, 'content-type': 'application/json', cookie, ...headers },
    });
    req.on('response', (res) => {
      answered = true;
      sampleRss();
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          code: text ? (JSON.parse(text) as { code?: string }).code : undefined,
          connection: res.headers.connection,
          written,
        }),
      );
    });
    req.on('error', (error) => {
      if (answered) return;
      // The server answered 413 and closed without reading the rest; a client still writing
      // can meet the closed socket before it has parsed that answer (lost with the reset).
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPIPE' || code === 'ECONNRESET') {
        answered = true;
        resolve({ status: 0, code: 'reset', connection: 'close', written });
      } else reject(error);
    });
    const chunk = Buffer.alloc(64 * 1024, ' ');
    const pump = () => {
      sampleRss();
      while (!answered && written < total) {
        const part = total - written >= chunk.length ? chunk : chunk.subarray(0, total - written);
        written += part.length;
        if (!req.write(part)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}

test('issue 10 item 2: chunked 100 MB bodies to the bootstrap and a session route answer 413 and memory stays bounded', async (t) => {
  const targets = ['/api/internal/adapter/bootstrap', '/api/auth/password/change'];
  // Warm both paths so the baseline already holds whatever a first request allocates.
  for (const path of targets) {
    refusedAtLimit(await upload('POST', path, 2 * MiB), `warm-up ${path}`);
  }
  const transactions = api.transactions();
  const baseline = process.memoryUsage.rss();
  peakRss = baseline;
  const sent = 4 * 100 * MiB;
  for (const path of targets) {
    for (let i = 0; i < 4; i++) {
      const answer = await upload('POST', path, sent / 4);
      refusedAtLimit(answer, path);
      // The server stopped reading at the limit: only socket buffers' worth got through.
      assert.ok(answer.written < 32 * MiB, `${path}: client wrote ${answer.written} bytes`);
    }
  }
  const growth = peakRss - baseline;
  t.diagnostic(`peak RSS growth ${(growth / MiB).toFixed(1)} MiB for ${sent * 2} bytes sent`);
  assert.ok(growth < 64 * MiB, `peak RSS grew ${(growth / MiB).toFixed(1)} MiB for 800 MB sent`);
  assert.equal(api.transactions(), transactions, 'no oversized request reached the database');
  // The server is still fine for the next caller.
  assert.equal((await fetch(`${api.url}/healthz`)).status, 200);
});

test('issue 10 item 2: a declared Content-Length over the limit is refused before the body is read, on any route', async () => {
  const declared = String(200 * MiB);
  // Only 1 MiB is ever sent: the answer can only come from the declared length, and it comes
  // before authentication (no cookie) and for a route that takes no body at all.
  const cases: [string, string][] = [
    ['POST', '/api/mssp/tenants'],
    ['GET', '/healthz'],
    ['POST', '/api/nothing-here'],
  ];
  for (const [method, path] of cases) {
    const answer = await upload(method, path, MiB, { 'content-length': declared, cookie: '' });
    refusedAtLimit(answer, `${method} ${path}`);
  }
});

test('issue 10 item 2: a GET with a chunked body is bounded too', async () => {
  const answer = await upload('GET', '/api/auth/me', 100 * MiB, { 'transfer-encoding': 'chunked' });
  refusedAtLimit(answer, 'GET /api/auth/me');
  assert.ok(answer.written < 32 * MiB, `client wrote ${answer.written} bytes`);
  const small = await upload('GET', '/api/auth/me', 100, { 'transfer-encoding': 'chunked' });
  assert.equal(small.status, 200, 'a small GET body is read and ignored');
});

test('issue 10 item 2: a body on TRACE, which a fetch Request cannot carry, is dropped, not a 500', async () => {
  for (const method of ['TRACE']) {
    const answer = await upload(method, '/api/internal/adapter/health', 100, {
      'transfer-encoding': 'chunked',
    });
    assert.deepEqual([method, answer.status, answer.code], [method, 405, 'method_not_allowed']);
  }
});

test('issue 10 item 2: a body of exactly the limit is accepted, one byte more is not', async () => {
  const email = `exact-${randomUUID()}@example.test`;
  await seedUser(db, api.hasher, { email, role: 'analyst', password: PASSWORD });
  const json = JSON.stringify({ email, password: PASSWORD });
  const exact = json + ' '.repeat(MAX_BODY_BYTES - Buffer.byteLength(json));
  const login = (body: string, chunked: boolean) =>
    fetch(`${api.url}/api/auth/login`, {
      method: 'POST',
      headers: { origin: api.origin, 'content-type': 'application/json' },
      // A stream has no length, so fetch sends it chunked.
      body: chunked ? new Blob([body]).stream() : body,
      ...(chunked ? { duplex: 'half' } : {}),
    } as RequestInit).then(async (r) => [r.status, ((await r.json()) as { code?: string }).code]);
  assert.deepEqual(await login(exact, false), [200, undefined]);
  assert.deepEqual(await login(exact, true), [200, undefined]);
  assert.deepEqual(await login(`${exact} `, false), [413, 'payload_too_large']);
  assert.deepEqual(await login(`${exact} `, true), [413, 'payload_too_large']);
});
