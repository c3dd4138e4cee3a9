import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type AppDatabase, createAppDatabase } from '../../src/db/pools.ts';
import { clientConfig } from '../../src/db/target.ts';
import {
  appendUncheckedEvent,
  type StoredEvent,
} from '../../src/domains/events/event-repository.ts';
import {
  createEventHub,
  type EventHub,
  type EventHubOptions,
} from '../../src/domains/events/event-service.ts';
import type { Subscription } from '../../src/domains/events/subscription.ts';
import type { TestDatabase } from '../support/database.ts';

/** Polls until probe returns something other than undefined/false, or fails after timeoutMs. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** Reads a subscription in the background, as a fast consumer would. */
export interface Collector {
  events: StoredEvent[];
  heartbeats: number;
  ids(): string[];
  /** Resolves with the events once `count` have arrived. */
  until(count: number, timeoutMs?: number): Promise<StoredEvent[]>;
  ended: Promise<void>;
}

export function collect(subscription: Subscription): Collector {
  const collector: Collector = {
    events: [],
    heartbeats: 0,
    ids: () => collector.events.map((e) => e.id),
    until: (count, timeoutMs) =>
      waitFor(
        `${count} events for tenant ${subscription.tenantId} (have ${collector.events.length})`,
        () => collector.events.length >= count && collector.events,
        timeoutMs,
      ),
    ended: Promise.resolve(),
  };
  collector.ended = (async () => {
    for await (const message of subscription) {
      if (message.kind === 'event') collector.events.push(message.event);
      else collector.heartbeats++;
    }
  })();
  return collector;
}

/** One event, `{note}` as its payload, on a new stream of `tenantId`, in that tenant's context. */
export function appendNote(db: AppDatabase, tenantId: string, note: string): Promise<StoredEvent> {
  return db.withTenant(tenantId, (tx) =>
    appendUncheckedEvent(tx, {
      tenantId,
      streamType: 'investigation',
      streamId: randomUUID(),
      streamSeq: 1,
      type: 'investigation.updated',
      payload: { note },
    }),
  );
}

/** Appends `count` events to a new stream, each in its own transaction (each its own commit). */
export async function appendSeparately(
  db: AppDatabase,
  tenantId: string,
  count: number,
  type = 'investigation.updated',
): Promise<StoredEvent[]> {
  const streamId = randomUUID();
  const events: StoredEvent[] = [];
  for (let seq = 1; seq <= count; seq++) {
    events.push(
      await db.withTenant(tenantId, (tx) =>
        appendUncheckedEvent(tx, {
          tenantId,
          streamType: 'investigation',
          streamId,
          streamSeq: seq,
          type,
          payload: { tenant: tenantId, seq },
        }),
      ),
    );
  }
  return events;
}

/** Appends `count` events in one transaction: one commit, a burst of notifications. */
export async function appendTogether(
  db: AppDatabase,
  tenantId: string,
  count: number,
): Promise<StoredEvent[]> {
  const streamId = randomUUID();
  return db.withTenant(tenantId, async (tx) => {
    const events: StoredEvent[] = [];
    for (let seq = 1; seq <= count; seq++) {
      events.push(
        await appendUncheckedEvent(tx, {
          tenantId,
          streamType: 'investigation',
          streamId,
          streamSeq: seq,
          type: 'investigation.updated',
          payload: { tenant: tenantId, seq },
        }),
      );
    }
    return events;
  });
}

/** A hub as one API process would run it: its own svc_app pool and a named LISTEN client. */
export interface TestHub {
  hub: EventHub;
  db: AppDatabase;
  /** application_name of its LISTEN connection, to find (and kill) it in pg_stat_activity. */
  name: string;
  close(): Promise<void>;
}

export async function startHub(
  database: TestDatabase,
  options: Partial<Omit<EventHubOptions, 'db' | 'target' | 'connect'>> & {
    connect?: (make: () => pg.Client) => pg.Client | Promise<pg.Client>;
  } = {},
): Promise<TestHub> {
  const name = `hub-${randomUUID().slice(0, 8)}`;
  const db = createAppDatabase(database.target, 4);
  const make = () =>
    new pg.Client({ ...clientConfig(database.target, 'app'), application_name: name });
  const { connect, ...rest } = options;
  const hub = await createEventHub({
    ...rest,
    db,
    connect: connect ? () => connect(make) : make,
  });
  return {
    hub,
    db,
    name,
    close: async () => {
      await hub.close();
      await db.close();
    },
  };
}

/** Backend pids of a hub's LISTEN connection (the superuser sees every session). */
export function listenerPids(database: TestDatabase, name: string): Promise<number[]> {
  return asSuperuser(database, async (client) => {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
      [name],
    );
    return rows.map((r) => r.pid);
  });
}

export async function asSuperuser<T>(
  database: TestDatabase,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client(database.superuser);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** One server-sent event as a client sees it (comments skipped). */
export interface Block {
  id?: string;
  event?: string;
  data?: string;
}

/** A real EventSource-like reader: yields event blocks, skips comments, undefined at the end. */
export async function openStream(
  url: string,
  headers: Record<string, string>,
  opened?: Set<() => void>,
) {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  assert.equal(res.status, 200, url);
  const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  async function next(): Promise<Block | undefined> {
    for (;;) {
      const end = buffered.indexOf('\n\n');
      if (end !== -1) {
        const text = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (text.startsWith(':')) continue;
        const block: Block = {};
        for (const line of text.split('\n')) {
          const [field, ...rest] = line.split(': ');
          if (field === 'id' || field === 'event' || field === 'data')
            block[field] = rest.join(': ');
        }
        return block;
      }
      const chunk = await reader?.read();
      if (!chunk || chunk.done) return undefined;
      buffered += chunk.value;
    }
  }
  /** The next block, failing the test if none comes within the bound. */
  async function within(ms: number): Promise<Block | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no block within ${ms} ms on ${url}`)), ms);
    });
    try {
      return await Promise.race([next(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
  const close = () => abort.abort();
  opened?.add(close);
  return { res, next: within, close };
}
