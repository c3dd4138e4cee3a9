import type { Readable } from 'node:stream';
import type { MiddlewareHandler } from 'hono';
import { ProblemError } from './problem.ts';

/** Methods whose body svc hands on; Node's fetch refuses TRACE, TRACK and CONNECT outright. */
const CARRIES_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The largest request body svc reads, on every route and method (spec §4; docs/api.md). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The client may still be sending when it is refused: `Connection: close` makes Node end the
 * connection once the answer is flushed, so the rest of the body is never read, let alone kept.
 */
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
    const declared = c.req.header('content-length');
    if (declared !== undefined && Number(declared) > max) throw tooLarge(max);
    const incoming = (c.env as { incoming?: Readable } | undefined)?.incoming;
    let body: Uint8Array | undefined;
    if (incoming) {
      // RFC 9112 §6.3: without Transfer-Encoding or Content-Length a request has no body.
      const none = declared === undefined || Number(declared) === 0;
      if (c.req.header('transfer-encoding') === undefined && none) return next();
      body = await readNode(incoming, max);
    } else {
      if (!c.req.raw.body) return next();
      body = await readWeb(c.req.raw.body, max);
    }
    if (body === undefined) throw tooLarge(max);
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
