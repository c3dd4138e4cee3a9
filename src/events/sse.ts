import type { Context } from 'hono';
import { type SSEMessage, type SSEStreamingApi, streamSSE } from 'hono/streaming';
import { problem } from '../http/problem.ts';
import type { EventHub } from './hub.ts';
import { parseEventId, type StoredEvent } from './store.ts';
import type { Subscription } from './subscription.ts';

/** The `data:` of one stream event; `id` stays a string because ids are 64-bit. */
export interface StreamEventData {
  id: string;
  type: string;
  stream_type: string;
  stream_id: string;
  stream_seq: number;
  occurred_at: string;
  payload: unknown;
}

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
  return { id: event.id, event: event.type, data: JSON.stringify(data) };
}

/**
 * Streams one tenant's events as server-sent events. The caller has already decided, by route
 * and identity, which tenant this is; the subscription stays bound to it. A Last-Event-ID that
 * is not a decimal event id is refused with 400 `invalid_last_event_id` before subscribing:
 * browsers only echo ids this endpoint sent, so anything else is a client bug worth surfacing.
 */
export async function streamTenantEvents(
  c: Context,
  hub: EventHub,
  tenantId: string,
): Promise<Response> {
  const header = c.req.header('last-event-id')?.trim();
  if (header && parseEventId(header) === undefined)
    return problem(c, 400, 'invalid_last_event_id', 'Last-Event-ID must be a decimal event id.');
  const subscription = await hub.subscribe(tenantId, header ? { lastEventId: header } : {});
  // Reverse proxies (nginx) would otherwise hold events back in their buffers.
  c.header('X-Accel-Buffering', 'no');
  return streamSSE(c, (stream) => pump(stream, subscription));
}

async function pump(stream: SSEStreamingApi, subscription: Subscription): Promise<void> {
  stream.onAbort(() => subscription.close());
  // The client may have gone between subscribing and this callback starting.
  if (stream.aborted) subscription.close();
  for await (const message of subscription) {
    if (message.kind === 'heartbeat') await stream.write(': heartbeat\n\n');
    else await stream.writeSSE(toSseMessage(message.event));
  }
  // Tells the client why the stream ends; it reconnects with Last-Event-ID and loses nothing.
  if (subscription.closeReason && subscription.closeReason !== 'unsubscribed')
    await stream.write(`: closed ${subscription.closeReason}\n\n`);
}
