import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { serve } from '@hono/node-server';
import { createApp } from '../../src/http/server/app.ts';
import { createLogger } from '../../src/log/index.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: createLogger('info', stream) };
}

function app(ready = true, trustedProxyCidrs: string[] = []) {
  const log = capture();
  return {
    log,
    app: createApp({
      authMode: 'internal',
      trustedProxyCidrs,
      logger: log.logger,
      databaseReady: async () => ready,
    }),
  };
}

test('§4.1 /healthz reports the auth mode and database readiness', async () => {
  const res = await app().app.request('/healthz');
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), {
    status: 'ok',
    auth_mode: 'internal',
    database: { ready: true },
  });
  const down = await app(false).app.request('/healthz');
  assert.equal(down.status, 503);
  assert.deepEqual(await down.json(), {
    status: 'degraded',
    auth_mode: 'internal',
    database: { ready: false },
  });
});

test('unknown routes answer problem+json with a stable code and the request id', async () => {
  const res = await app().app.request('/api/nothing-here');
  assert.equal(res.status, 404);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(body.code, 'not_found');
  assert.equal(body.status, 404);
  assert.equal(body.request_id, res.headers.get('x-request-id'));
});

test('every request gets an X-Request-Id, and every log line of it carries that id', async () => {
  const { app: a, log } = app();
  const res = await a.request('/healthz');
  const id = res.headers.get('x-request-id');
  assert.match(id ?? '', /^[0-9a-f-]{36}$/);
  const requestLines = log.lines.filter((l) => l.msg === 'request');
  assert.equal(requestLines.length, 1);
  assert.equal(requestLines[0]?.request_id, id);
});

test('a client-supplied X-Request-Id from an untrusted peer is replaced, not echoed', async () => {
  // app.request() has no socket, so the peer is unknown and therefore untrusted.
  const { app: a } = app(true, ['127.0.0.1/32']);
  for (const spoofed of ['attacker-chosen-id', 'a'.repeat(500)]) {
    const res = await a.request('/healthz', { headers: { 'X-Request-Id': spoofed } });
    assert.notEqual(res.headers.get('x-request-id'), spoofed);
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  }
});

async function overSocket(trusted: string[], requestId: string): Promise<string | null> {
  const { app: a } = app(true, trusted);
  const server = serve({ fetch: a.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
      headers: { 'X-Request-Id': requestId },
    });
    return res.headers.get('x-request-id');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

test('X-Request-Id is accepted only from a peer inside the trusted proxy CIDRs', async () => {
  assert.equal(await overSocket(['127.0.0.0/8'], 'edge-7f3a'), 'edge-7f3a');
  assert.notEqual(await overSocket(['10.0.0.0/8'], 'edge-7f3a'), 'edge-7f3a');
  assert.notEqual(await overSocket(['127.0.0.0/8'], 'bad id with spaces'), 'bad id with spaces');
});

test('issue 10 item 2: a client that vanishes mid-body is a 400 body_incomplete in the log, not a 500', async () => {
  const { app: a, log } = app();
  const server = serve({ fetch: a.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  try {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(
      'POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n',
    );
    socket.destroy();
    // Waits for the request's log line however long the server takes (the runner bounds it).
    while (!log.lines.some((l) => l.msg === 'request')) await setTimeout(10);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  const request = log.lines.find((l) => l.msg === 'request');
  assert.equal(request?.status, 400);
  assert.equal(log.lines.filter((l) => l.msg === 'unhandled error').length, 0);
});

test('issue 10 item 2: the body bound holds without a Node socket too (web Request bodies)', async () => {
  const { app: a } = app();
  const stream = (bytes: number) => new Blob([new Uint8Array(bytes)]).stream();
  const post = (bytes: number) =>
    a.request('/api/nothing-here', {
      method: 'POST',
      body: stream(bytes),
      duplex: 'half',
    } as RequestInit);
  const big = await post(2 * 1024 * 1024);
  assert.deepEqual(
    [big.status, ((await big.json()) as { code: string }).code],
    [413, 'payload_too_large'],
  );
  assert.equal((await post(1024)).status, 404);
});
