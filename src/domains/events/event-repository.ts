import type pg from 'pg';
import type * as s from 'zapatos/schema';
import type { EVENT_CATALOG, EventPayload, EventType } from '../../../contracts/events.ts';
import { prepared } from '../../db/prepared.ts';
import type { TenantTx } from '../../db/tenant-context.ts';

/** One row of `events` as the application sees it. Ids are decimal strings (bigint). */
export interface StoredEvent {
  id: string;
  tenantId: string;
  streamType: string;
  streamId: string;
  streamSeq: number;
  type: string;
  payload: unknown;
  actor: string | null;
  occurredAt: Date;
  recordedAt: Date;
}

/**
 * What the store takes, whatever the type: the one primitive the typed appends below share.
 * Only tests and benchmarks call it directly (appendUncheckedEvent), to write rows no writer
 * writes (old payloads, foreign types); test/events/catalog.test.ts keeps src/ and web/ off it.
 */
export interface UncheckedEventInput {
  /** Must equal the transaction's tenant context; RLS rejects anything else. */
  tenantId: string;
  streamType: string;
  streamId: string;
  /** The position being written: exactly one past the stream's last event (1 for a new one). */
  streamSeq: number;
  type: string;
  payload?: unknown;
  actor?: string | null;
  occurredAt?: Date;
}

/** The stream a catalog type is appended to (contracts/events.ts `stream`). */
export type StreamOf<T extends EventType> = (typeof EVENT_CATALOG)[T]['stream'];

/**
 * One catalog event to append (docs/events.md "Catalog"): its type names its payload and its
 * stream type, so an unknown name, a missing or a stray payload field is a type error.
 * Distributed over T, so a union of types takes any one of them with its own payload.
 */
export type AppendEventInput<T extends EventType = EventType> = {
  [K in T]: Omit<UncheckedEventInput, 'streamType' | 'type' | 'payload'> & {
    streamType: StreamOf<K>;
    type: K;
    payload: EventPayload<K>;
  };
}[T];

/** A catalog event appended at its stream's next position (appendToStream). */
export type StreamAppendInput<T extends EventType = EventType> = {
  [K in T]: Omit<AppendEventInput<K>, 'streamSeq'>;
}[T];

/** Another writer got to this stream position first (or the caller's view of it is stale). */
export class StreamConflictError extends Error {
  override name = 'StreamConflictError';
  constructor(
    readonly streamId: string,
    readonly expectedSeq: number,
    readonly currentSeq: number,
  ) {
    super(`stream ${streamId}: cannot append at ${expectedSeq}, the stream is at ${currentSeq}`);
  }
}

// Postgres bigint is signed 64-bit; ids are drawn from an identity starting at 1.
const MAX_EVENT_ID = 9_223_372_036_854_775_807n;
const DIGITS = /^\d{1,19}$/;

/** A decimal event id (as sent back in Last-Event-ID), or undefined when it is not one. */
export function parseEventId(value: string): bigint | undefined {
  if (!DIGITS.test(value)) return undefined;
  const id = BigInt(value);
  return id <= MAX_EVENT_ID ? id : undefined;
}

type EventRow = s.events.Selectable;

const COLUMNS = `id, tenant_id, stream_type, stream_id, stream_seq, type, payload, actor,
  occurred_at, recorded_at`;

function toEvent(row: EventRow): StoredEvent {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    streamType: row.stream_type,
    streamId: row.stream_id,
    streamSeq: row.stream_seq,
    type: row.type,
    payload: row.payload,
    actor: row.actor,
    occurredAt: row.occurred_at,
    recordedAt: row.recorded_at,
  };
}

async function currentSeq(tx: TenantTx, streamId: string): Promise<number> {
  const { rows } = await tx.query<{ seq: number }>(
    'SELECT coalesce(max(stream_seq), 0) AS seq FROM events WHERE stream_id = $1',
    [streamId],
  );
  return rows[0]?.seq ?? 0;
}

/**
 * Appends one event inside the caller's withTenant transaction. The position check is
 * optimistic: a stale position fails before writing, and a concurrent writer that wins the
 * same position makes the insert a no-op (ON CONFLICT DO NOTHING) rather than a unique
 * violation, so the caller's transaction stays usable after a StreamConflictError.
 */
export function appendEvent<T extends EventType>(
  tx: TenantTx,
  input: AppendEventInput<T>,
): Promise<StoredEvent> {
  return appendUncheckedEvent(tx, input);
}

/** appendEvent without the catalog's types: for tests and benchmarks only (see above). */
export async function appendUncheckedEvent(
  tx: TenantTx,
  input: UncheckedEventInput,
): Promise<StoredEvent> {
  if (!Number.isInteger(input.streamSeq) || input.streamSeq < 1)
    throw new RangeError(`streamSeq must be a positive integer, got ${input.streamSeq}`);
  const before = await currentSeq(tx, input.streamId);
  if (before !== input.streamSeq - 1)
    throw new StreamConflictError(input.streamId, input.streamSeq, before);
  const { rows } = await tx.query<EventRow>(
    `INSERT INTO events
       (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, coalesce($8, now()))
     ON CONFLICT (tenant_id, stream_id, stream_seq) DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      input.tenantId,
      input.streamType,
      input.streamId,
      input.streamSeq,
      input.type,
      JSON.stringify(input.payload ?? {}),
      input.actor ?? null,
      input.occurredAt ?? null,
    ],
  );
  const row = rows[0];
  if (!row)
    throw new StreamConflictError(
      input.streamId,
      input.streamSeq,
      await currentSeq(tx, input.streamId),
    );
  return toEvent(row);
}

/**
 * An event that opens its stream (position 1), for appendStreamStarts. Its type is a catalog
 * type; its payload is JSON text built by the caller (ingest builds it by hand, to serialize
 * each alert once), so the catalog test, not this hot path, checks it against the schema.
 */
export type StreamStart<T extends EventType = EventType> = {
  [K in T]: {
    streamType: StreamOf<K>;
    streamId: string;
    type: K;
    /** The payload as JSON text, so a caller that serialized it already does not pay twice. */
    payloadJson: string;
    /** Milliseconds since the epoch. */
    occurredAtMs: number;
  };
}[T];

/**
 * Appends many events, each opening its stream at position 1, in one statement inside the
 * caller's withTenant transaction; their ids follow the array's order. The per-stream
 * optimistic rule holds as in appendEvent: a stream that already has its first event keeps it
 * (ON CONFLICT DO NOTHING, no error, the transaction stays usable). Returns the stream ids
 * whose event this call wrote; the others already existed. The rows travel as one jsonb
 * array, so the statement's text is fixed whatever the batch size (prepared once per
 * connection) and the database parses the batch once.
 */
export async function appendStreamStarts(
  tx: TenantTx,
  tenantId: string,
  actor: string,
  events: readonly StreamStart[],
): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const rows = events.map(
    (e) =>
      `{"stream_type":${JSON.stringify(e.streamType)},"stream_id":${JSON.stringify(e.streamId)},` +
      `"type":${JSON.stringify(e.type)},"occurred_at_ms":${e.occurredAtMs},"payload":${e.payloadJson}}`,
  );
  const { rows: written } = await tx.query<Pick<EventRow, 'stream_id'>>(
    prepared(
      'events.stream_starts',
      `INSERT INTO events
         (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at)
       SELECT $1::uuid, e->>'stream_type', (e->>'stream_id')::uuid, 1, e->>'type', e->'payload',
              $2::text, to_timestamp((e->>'occurred_at_ms')::double precision / 1000)
         FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS batch (e, n)
        ORDER BY n
       ON CONFLICT (tenant_id, stream_id, stream_seq) DO NOTHING
       RETURNING stream_id`,
      [tenantId, actor, `[${rows.join(',')}]`],
    ),
  );
  return new Set(written.map((r) => r.stream_id));
}

/**
 * Events after `afterId` in id order, at most `limit`. No tenant parameter on purpose: the
 * transaction's tenant context (RLS) decides whose events these are.
 */
export async function readEventsAfter(
  tx: TenantTx,
  afterId: bigint | string,
  limit: number,
): Promise<StoredEvent[]> {
  const { rows } = await tx.query<EventRow>(
    prepared(
      'events.after',
      `SELECT ${COLUMNS} FROM events WHERE id > $1::bigint ORDER BY id LIMIT $2`,
      [String(afterId), limit],
    ),
  );
  return rows.map(toEvent);
}

/**
 * The alert fields the projections fold (src/domains/projections/*-projection.ts: the
 * rule's id, level and description, the indicator fields), so the projector does not carry
 * every stored alert document from PostgreSQL into JSON.parse only to read five fields of it.
 * Absent fields come back as JSON null, which the folds treat as absent.
 */
const FOLDED_PAYLOAD = `CASE WHEN type = 'alert.received' THEN
    (payload - 'alert') || jsonb_build_object('alert', jsonb_build_object(
      'rule', jsonb_build_object(
        'id', payload #> '{alert,rule,id}',
        'level', payload #> '{alert,rule,level}',
        'description', payload #> '{alert,rule,description}'),
      'data', jsonb_build_object(
        'srcip', payload #> '{alert,data,srcip}',
        'dstip', payload #> '{alert,data,dstip}',
        'url', payload #> '{alert,data,url}'),
      'syscheck', jsonb_build_object(
        'sha256_after', payload #> '{alert,syscheck,sha256_after}',
        'md5_after', payload #> '{alert,syscheck,md5_after}')))
  ELSE payload END AS payload`;

/**
 * Events after `afterId` in id order, at most `limit`, with alert documents cut to what the
 * projections read (FOLDED_PAYLOAD); every other event whole. RLS decides whose events.
 */
export async function readEventsToFold(
  tx: TenantTx,
  afterId: bigint | string,
  limit: number,
): Promise<StoredEvent[]> {
  const { rows } = await tx.query<EventRow>(
    prepared(
      'events.to_fold',
      `SELECT id, tenant_id, stream_type, stream_id, stream_seq, type, ${FOLDED_PAYLOAD}, actor,
              occurred_at, recorded_at
         FROM events WHERE id > $1::bigint ORDER BY id LIMIT $2`,
      [String(afterId), limit],
    ),
  );
  return rows.map(toEvent);
}

/** The highest event id visible in the transaction's tenant context (0n when none). */
export async function latestEventId(tx: TenantTx): Promise<bigint> {
  const { rows } = await tx.query<{ id: string }>(
    'SELECT coalesce(max(id), 0)::text AS id FROM events',
  );
  return BigInt(rows[0]?.id ?? '0');
}

/** The channel sql/0008_event_notify.sql notifies on. */
export const EVENTS_CHANNEL = 'svc_events';

/** Subscribes a dedicated (unpooled) connection to new-event notices. */
export async function listenForEvents(client: pg.Client): Promise<void> {
  await client.query(`LISTEN ${EVENTS_CHANNEL}`);
}

/** The channel sql/0027_session_revocation_purge.sql notifies revocations on. */
export const REVOCATION_CHANNEL = 'svc_revocation';

/**
 * Subscribes the same connection to revocation notices: one connection receives both
 * channels in commit order, so a revocation is seen before any event committed after it.
 */
export async function listenForRevocations(client: pg.Client): Promise<void> {
  await client.query(`LISTEN ${REVOCATION_CHANNEL}`);
}

/**
 * A round trip on the LISTEN connection, which otherwise only receives. It doubles as a
 * barrier: PostgreSQL sends a listener every notification of a transaction that committed
 * before the query arrived ahead of the query's answer, so once it resolves every such
 * notification has been handled (pg emits them synchronously as it reads them).
 */
export async function pingListener(client: pg.Client): Promise<void> {
  await client.query('SELECT 1');
}

/**
 * Appends at the stream's next position, whatever it is: for writers that only need their
 * event after the ones already there (the pipeline's steps on an investigation's stream). One
 * statement reads the position and writes; a concurrent writer taking the position first
 * makes it a no-op (ON CONFLICT), and it is tried again (at most 5 times).
 */
export async function appendToStream<T extends EventType>(
  tx: TenantTx,
  input: StreamAppendInput<T>,
): Promise<StoredEvent> {
  for (let tries = 0; ; tries++) {
    const { rows } = await tx.query<EventRow>(
      prepared(
        'events.append-next',
        `INSERT INTO events
           (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at)
         SELECT $1, $2, $3::uuid, coalesce(max(stream_seq), 0) + 1, $4, $5::jsonb, $6,
                coalesce($7::timestamptz, now())
           FROM events WHERE stream_id = $3::uuid
         ON CONFLICT (tenant_id, stream_id, stream_seq) DO NOTHING
         RETURNING ${COLUMNS}`,
        [
          input.tenantId,
          input.streamType,
          input.streamId,
          input.type,
          JSON.stringify(input.payload ?? {}),
          input.actor ?? null,
          input.occurredAt ?? null,
        ],
      ),
    );
    const row = rows[0];
    if (row) return toEvent(row);
    if (tries >= 4)
      throw new StreamConflictError(input.streamId, 0, await currentSeq(tx, input.streamId));
  }
}
