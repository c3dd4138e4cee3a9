import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { MiddlewareHandler } from 'hono';
import { ProblemError } from './problem.ts';

/** Methods whose body svc hands on; Node's fetch refuses TRACE, TRACK and CONNECT outright. */
const CARRIES_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The largest request body svc reads, on every route and method (spec §4; docs/api.md). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * After a 413, svc reads and discards at most this much more of the refused body (not kept:
 * each chunk is dropped as it arrives), so a client that sends its whole upload before it
 * looks at the answer still reads the 413 instead of a reset (docs/api.md, input rules).
 */
export const DRAIN_MAX_BYTES = 16 * 1024 * 1024;

/** …and for at most this long from the refusal, so a slow sender cannot hold the socket. */
export const DRAIN_MAX_MS = 10_000;

/** Sockets that answered a 413: nothing more is served on them (a pipelined request). */
const refusedSockets = new WeakSet<Socket>();

/** `Expect: 100-continue` requests whose 100 limitBody sends, once it starts reading. */
const awaitingContinue = new WeakSet<IncomingMessage>();

/**
 * Lets limitBody answer `Expect: 100-continue` itself: Node would send 100 Continue before the
 * app sees the request, inviting the very body a declared Content-Length already refuses. With
 * this, the 100 is sent only when the body is to be read, and a refused one gets just its 413.
 */
export function deferContinue<S extends EventEmitter>(server: S): S {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.add(req);
    server.emit('request', req, res);
  });
  return server;
}

/**
 * A lingering close after a 413 (as Apache and nginx do). Closing at once while the client is
 * still sending makes the kernel answer the unread bytes with a reset, which destroys the 413
 * before the client reads it and fails its write with EPIPE/ECONNRESET. Instead: the answer goes
 * out with `Connection: close`, the write side is half-closed after it (Node calls
 * `socket.destroySoon()` for that; this socket's is replaced), and the rest of the body is read
 * and dropped until it ends, the peer goes, or DRAIN_MAX_BYTES / DRAIN_MAX_MS pass; then the
 * socket is destroyed. Nothing is buffered, and nothing after the body is served (the
 * connection is never reused: a pipelined request is dropped by limitBody).
 */
function drainThenClose(incoming: IncomingMessage): void {
  const socket = incoming.socket;
  if (refusedSockets.has(socket)) return;
  refusedSockets.add(socket);
  let dropped = 0;
  let responded = false;
  let finished = false;
  const close = () => {
    clearTimeout(timer);
    incoming.off('data', onData);
    incoming.off('end', onDone);
    incoming.off('close', onDone);
    if (socket.writable) socket.end();
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  // Body read to its end, peer gone, or a bound passed: close once the 413 is out.
  const onDone = () => {
    if (finished) return;
    finished = true;
    incoming.pause();
    if (responded) close();
  };
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_MAX_BYTES) onDone();
  };
  // Past the time bound the drain stops; and an answer not out by then is not coming.
  const timer = setTimeout(() => (responded ? onDone() : socket.destroy()), DRAIN_MAX_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // Called by Node once the 413 is written (the response said `Connection: close`).
  socket.destroySoon = () => {
    if (responded) return;
    responded = true;
    if (finished) close();
    else if (socket.writable) socket.end();
  };
  if (incoming.readableEnded || incoming.destroyed) {
    finished = true;
    return;
  }
  incoming.on('data', onData);
  incoming.on('end', onDone);
  incoming.on('close', onDone);
  incoming.resume();
}

/**
 * The client may still be sending when it is refused: the answer carries `Connection: close`,
 * and on Node the rest of the body is drained within bounds (drainThenClose), never kept.
 */
function refuse(max: number, incoming: IncomingMessage | undefined): ProblemError {
  if (incoming) drainThenClose(incoming);
  return tooLarge(max);
}

function tooLarge(max: number): ProblemError {
  return new ProblemError(
    413,
    'payload_too_large',
    'Request body is too large',
    { detail: `Request bodies are limited to ${max} bytes` },
    { connection: 'close' },
  );
}

function incomplete(): ProblemError {
  return new ProblemError(400, 'body_incomplete', 'Request body ended before it was complete');
}

/**
 * Reads the Node request directly (not through @hono/node-server's web stream, whose cancel
 * destroys the socket before a 413 can be written, and which does not exist for a GET), at
 * most `max` bytes; past that it stops reading and leaves the rest unread on the socket.
 */
function readNode(incoming: Readable, max: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onFail);
      incoming.off('close', onFail);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        stop();
        incoming.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks, size));
    };
    const onFail = () => {
      stop();
      reject(incomplete());
    };
    // Gone while earlier middleware ran: its 'close' has fired already and will not again.
    if (incoming.destroyed) {
      reject(incomplete());
      return;
    }
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onFail);
    incoming.on('close', onFail);
  });
}

/** The same bound for a web Request body (Hono's own `app.request`, other runtimes). */
async function readWeb(
  body: ReadableStream<Uint8Array>,
  max: number,
): Promise<Uint8Array | undefined> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks, size);
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
}

/** A larger bound for one route, named by method and exact path (`POST /api/...`). */
export interface RouteBodyLimit {
  method: string;
  path: string;
  max: number;
}

/**
 * App-level body bound, installed before authentication, CSRF and every handler: a declared
 * Content-Length above `max` is refused before a byte is read; a chunked or undeclared body is
 * counted as it arrives and refused the moment it passes `max`, so no more than `max` bytes of
 * any request are ever held. Handlers then read the already-buffered body as usual. A route in
 * `larger` gets its own bound instead, the same way and at the same point (before its
 * authentication too: which bound applies depends only on the method and path).
 */
export function limitBody(
  defaultMax = MAX_BODY_BYTES,
  larger: readonly RouteBodyLimit[] = [],
): MiddlewareHandler {
  const byRoute = new Map(larger.map((l) => [`${l.method} ${l.path}`, l.max]));
  return async (c, next) => {
    const max = byRoute.get(`${c.req.method} ${c.req.path}`) ?? defaultMax;
    const node = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
    const incoming = node?.incoming;
    // Pipelined behind a refused body, on a connection that is closing: never served (and the
    // answer is never sent, as Node writes no response after a `Connection: close` one).
    if (incoming && refusedSockets.has(incoming.socket)) {
      incoming.socket.destroy();
      return c.body(null, 400);
    }
    const declared = c.req.header('content-length');
    if (declared !== undefined && Number(declared) > max) throw refuse(max, incoming);
    let body: Uint8Array | undefined;
    if (incoming) {
      // RFC 9112 §6.3: without Transfer-Encoding or Content-Length a request has no body.
      const none = declared === undefined || Number(declared) === 0;
      if (c.req.header('transfer-encoding') === undefined && none) return next();
      // The body is wanted now: this is when `Expect: 100-continue` gets its 100 (deferContinue).
      if (awaitingContinue.delete(incoming)) node?.outgoing?.writeContinue();
      body = await readNode(incoming, max);
    } else {
      if (!c.req.raw.body) return next();
      body = await readWeb(c.req.raw.body, max);
    }
    if (body === undefined) throw refuse(max, incoming);
    const method = c.req.method;
    // Any other body (GET, HEAD, TRACE …) is read, so it is bounded, and dropped: a fetch
    // Request cannot carry one, and no svc route takes one.
    if (CARRIES_BODY.has(method)) {
      const raw = c.req.raw;
      c.req.raw = new Request(raw.url, { method, headers: raw.headers, body, signal: raw.signal });
    }
    await next();
  };
}
