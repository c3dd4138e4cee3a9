import type { Context } from 'hono';
import type { SSEMessage } from 'hono/streaming';
import type { StreamEvent } from '../../contracts/events.ts';
import { parseEventId, type StoredEvent } from '../domains/events/event-repository.ts';
import type { EventHub } from '../domains/events/event-service.ts';
import type { Subscription } from '../domains/events/subscription.ts';
import type { CredentialLease, CredentialWatch } from '../domains/sessions/credential-watch.ts';
import { problem } from './problem.ts';

/**
 * The `data:` of one stream event: a catalog event (contracts/events.ts `StreamEvent`), or a
 * row whose type the catalog does not know (written before it, or by a test), which still goes
 * out under its own name so that a replay never skips an id.
 */
export type StreamEventData =
  | StreamEvent
  | (Omit<StreamEvent, 'type' | 'stream_type' | 'payload'> & {
      type: string;
      stream_type: string;
      payload: unknown;
    });

/** One stored event as an SSE message, named (`event:`) by its type. */
export function toSseMessage(event: StoredEvent): SSEMessage {
  const data: StreamEventData = {
    id: event.id,
    type: event.type,
    stream_type: event.streamType,
    stream_id: event.streamId,
    stream_seq: event.streamSeq,
    occurred_at: event.occurredAt.toISOString(),
    payload: event.payload,
  };
  // The name EventSource listeners subscribe to (web/shared/events.ts: the catalog's names).
  return { id: event.id, event: event.type, data: JSON.stringify(data) };
}

const encoder = new TextEncoder();
const HEARTBEAT = encoder.encode(': heartbeat\n\n');

/**
 * The hub offers one StoredEvent object to every subscriber of its tenant: its frame is
 * serialized and encoded once and the same bytes are written to every stream (nobody writes
 * into them). Weak, so a frame lives exactly as long as the event object some queue holds.
 */
const frames = new WeakMap<StoredEvent, Uint8Array>();

/** The wire form of toSseMessage (as Hono's writeSSE writes it), shared per event object. */
export function sseFrame(event: StoredEvent): Uint8Array {
  let frame = frames.get(event);
  if (frame) return frame;
  const message = toSseMessage(event);
  for (const value of [message.event, message.id])
    if (value && /[\r\n]/.test(value))
      throw new Error('an SSE field must not contain a line break');
  // JSON.stringify escapes line breaks, so the data is one `data:` line.
  const text = `event: ${message.event}\ndata: ${message.data}\nid: ${message.id}\n\n`;
  frame = encoder.encode(text);
  frames.set(event, frame);
  return frame;
}

/**
 * What a stream needs: the process's hub and its one credential watch (built once in
 * src/app/compose.ts, so a process runs one re-check pass per interval however many streams
 * and routes it serves).
 */
export interface StreamDeps {
  events: EventHub;
  watch: CredentialWatch;
}

/**
 * Streams one tenant's events as server-sent events. The caller has already decided, by route
 * and identity, which tenant this is; the subscription stays bound to it. A Last-Event-ID that
 * is not a decimal event id is refused with 400 `invalid_last_event_id` before subscribing:
 * browsers only echo ids this endpoint sent, so anything else is a client bug worth surfacing.
 *
 * The stream lives no longer than the credential that opened it (docs/events.md "A stream lives no
 * longer than its credential"): it ends at the credential's deadline and at a revocation, with a
 * last `revoked` or `expired` event saying why, and nothing is written once the credential is gone
 * or while it is in doubt — no event committed after a revocation reaches it, on any replica
 * (docs/auth.md, open event streams).
 */
export async function streamTenantEvents(
  c: Context,
  deps: StreamDeps,
  tenantId: string,
): Promise<Response> {
  const header = c.req.header('last-event-id')?.trim();
  if (header && parseEventId(header) === undefined)
    return problem(c, 400, 'invalid_last_event_id', 'Last-Event-ID must be a decimal event id.');
  const credential = c.get('credential');
  if (!credential) throw new Error('an event stream needs the credential that authenticated it');
  const lease = deps.watch.watch(credential);
  let subscription: Subscription;
  try {
    subscription = await deps.events.subscribe(tenantId, header ? { lastEventId: header } : {});
  } catch (error) {
    lease.release();
    throw error;
  }
  return c.body(eventStream(subscription, lease), 200, {
    // Hono's streamSSE headers, but no-store: no-cache would let a cache store one tenant's
    // events (and only revalidate them).
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-store',
    Connection: 'keep-alive',
    'Transfer-Encoding': 'chunked',
    // Reverse proxies (nginx) would otherwise hold events back in their buffers.
    'X-Accel-Buffering': 'no',
  });
}

/**
 * The response body, pulled by the server as the socket takes it (docs/events.md "A pulled response body"): each read takes
 * the subscription's next message and hands out its shared frame. No TransformStream, writer or
 * pump in between (Hono's streamSSE), which cost each of 10,000 open streams memory and every
 * delivery a few more promise hops. Nothing is pulled while the socket is backed up, so a slow
 * client's events wait in its subscription queue, bounded by maxQueue.
 */
function eventStream(subscription: Subscription, lease: CredentialLease): ReadableStream {
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    lease.release();
    subscription.close();
  };
  // Wakes a stream waiting for events, so an idle one ends at once too.
  void lease.ended.then(() => subscription.close());
  return new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        try {
          const next = await subscription.next();
          if (!next.done) {
            // Judged before every write: nothing reaches the client once the credential is
            // gone, and nothing while a revocation notice naming it awaits its re-check.
            await lease.settled();
            if (!lease.check()) {
              const { value } = next;
              controller.enqueue(value.kind === 'heartbeat' ? HEARTBEAT : sseFrame(value.event));
              return;
            }
          }
          const last = lastBlock(subscription, lease);
          finish();
          if (last) controller.enqueue(last);
          controller.close();
        } catch (error) {
          finish();
          controller.error(error);
        }
      },
      // The client went away (the server cancels the body when the socket closes).
      cancel: finish,
    },
    { highWaterMark: 0 },
  );
}

/**
 * Why the stream ends, as its last block: the credential's end (no id, so the client's
 * Last-Event-ID stays at the last event it really got), or the hub's reason as a comment; the
 * client reconnects with Last-Event-ID and loses nothing.
 */
function lastBlock(subscription: Subscription, lease: CredentialLease): Uint8Array | undefined {
  const end = lease.check();
  if (end)
    return encoder.encode(
      `event: ${end.event}\ndata: ${JSON.stringify({ reason: end.reason })}\n\n`,
    );
  const reason = subscription.closeReason;
  return reason && reason !== 'unsubscribed' ? encoder.encode(`: closed ${reason}\n\n`) : undefined;
}

/** How long a revoking request waits for this process's streams to be re-checked. */
export const SETTLE_MAX_MS = 2_000;

/**
 * Called after a state-changing request committed, before it answers: once every revocation
 * notice it caused has reached this process (a round trip on the LISTEN connection) and the
 * streams it named are re-checked, the revoking call answers with the local streams already
 * ended. Streams on other replicas are paused as their notice arrives, before any event
 * committed after it. Bounded: when the database cannot be read the streams in doubt stay
 * paused (nothing is written to them) and the request answers after SETTLE_MAX_MS.
 */
export async function settleStreams(deps: StreamDeps): Promise<void> {
  if (deps.watch.status().watched === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, SETTLE_MAX_MS);
  });
  const settle = async () => {
    await deps.events.sync();
    await deps.watch.settled();
  };
  try {
    await Promise.race([settle().catch(() => undefined), bound]);
  } finally {
    clearTimeout(timer);
  }
}
