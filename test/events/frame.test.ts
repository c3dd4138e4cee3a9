import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SSEStreamingApi } from 'hono/streaming';
import type { StoredEvent } from '../../src/domains/events/event-repository.ts';
import { sseFrame, toSseMessage } from '../../src/http/event-stream.ts';

/**
 * Issue 33: a stored event is serialized once and the same bytes go to every subscriber of its
 * tenant. The bytes must be exactly what Hono's writeSSE wrote for it before.
 */

function storedEvent(payload: unknown, type = 'note.added'): StoredEvent {
  return {
    id: '4711',
    tenantId: '0b6f5c8e-3f1a-4c55-9d53-2a7d0c1e9f10',
    type,
    streamType: 'investigation',
    streamId: '6f1c2e4a-8b3d-4e5f-a1b2-c3d4e5f60718',
    streamSeq: 3,
    occurredAt: new Date('2026-12-07T19:30:00.123Z'),
    recordedAt: new Date('2026-12-07T19:30:00.456Z'),
    actor: 'Worker',
    payload,
  };
}

async function honoBytes(event: StoredEvent): Promise<string> {
  const { readable, writable } = new TransformStream();
  const stream = new SSEStreamingApi(writable, readable);
  const text = new Response(stream.responseReadable).text();
  await stream.writeSSE(toSseMessage(event));
  await stream.close();
  return text;
}

test('issue 33 an event is encoded once: every subscriber gets the same bytes, as writeSSE wrote them', async () => {
  const payloads = [
    { note: 'plain' },
    { note: 'two\nlines\r\nand a carriage\rreturn', nested: { list: [1, 'ü', null] } },
    { note: '</script><script>alert(1)</script>', emoji: '🛡️' },
  ];
  for (const payload of payloads) {
    const event = storedEvent(payload);
    const frame = sseFrame(event);
    assert.equal(sseFrame(event), frame, 'the same object for the same event');
    assert.equal(new TextDecoder().decode(frame), await honoBytes(event));
  }
  // Another object (another read of the same row) is encoded anew, to the same bytes.
  const again = storedEvent(payloads[0]);
  assert.notEqual(sseFrame(again), sseFrame(storedEvent(payloads[0])));
  assert.deepEqual(sseFrame(again), sseFrame(storedEvent(payloads[0])));
});

test('issue 33 an event type with a line break is refused, as writeSSE refused it', () => {
  assert.throws(() => sseFrame(storedEvent({}, 'note\nid: 1')), /line break/);
});
