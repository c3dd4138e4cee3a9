import pg from 'pg';
import type { AppDatabase } from '../../db/pools.ts';
import { clientConfig, type DatabaseTarget } from '../../db/target.ts';
import { isUuid } from '../../db/tenant-context.ts';
import {
  latestEventId,
  parseEventId,
  readEventsAfter,
  type StoredEvent,
} from './event-repository.ts';
import { Subscriber, type Subscription } from './subscription.ts';

/** The channel sql/0008_event_notify.sql notifies on. */
export const EVENTS_CHANNEL = 'svc_events';

export const EVENT_HUB_DEFAULTS = {
  heartbeatMs: 15_000,
  maxQueue: 1_000,
  pageSize: 200,
  reconnectMinMs: 100,
  reconnectMaxMs: 5_000,
} as const;

interface EventHubCommonOptions {
  /** The svc_app database: every row the hub reads is read under withTenant. */
  db: AppDatabase;
  heartbeatMs?: number;
  /** Events a subscriber may fall behind by before it is dropped. */
  maxQueue?: number;
  /** Rows per read, for live fetches and replay pages; capped at maxQueue. */
  pageSize?: number;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Failures the hub recovers from by itself (reconnects, retried reads), for logging. */
  onError?: (error: unknown, context: string) => void;
}

/** Where the one LISTEN connection comes from: svc_app on the target, or a client factory. */
export type EventHubOptions = EventHubCommonOptions &
  ({ target: DatabaseTarget } | { connect: () => pg.Client | Promise<pg.Client> });

export interface SubscribeOptions {
  /** Resume after this id (decimal digits), as sent back in Last-Event-ID. */
  lastEventId?: string;
}

export interface EventHubStatus {
  listening: boolean;
  tenants: number;
  subscribers: number;
  reconnects: number;
}

export interface EventHub {
  /**
   * A subscription bound to one tenant for its whole life. Resolves once it is positioned:
   * every event committed after that is delivered, and with lastEventId every event after
   * that id is delivered first.
   */
  subscribe(tenantId: string, options?: SubscribeOptions): Promise<Subscription>;
  status(): EventHubStatus;
  close(): Promise<void>;
}

interface TenantChannel {
  tenantId: string;
  subscribers: Set<Subscriber>;
  /** Highest id the hub has fetched for this tenant; undefined until positioned. */
  cursor: bigint | undefined;
  ready: Promise<void>;
  fetching: boolean;
  /** A notification (or a full page) arrived while fetching: fetch again. */
  dirty: boolean;
}

interface Notice {
  tenantId: string;
  id: bigint;
}

/**
 * Notifications are hints, not data: any role that can connect may NOTIFY this channel. The
 * payload only says which tenant to look at; what is delivered is read from the table under
 * that tenant's RLS context, so a forged notice can at worst cause a harmless read.
 */
export function parseNotice(payload: string | undefined): Notice | undefined {
  if (payload === undefined || payload.length > 200) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { tenant_id: tenantId, id } = value as Record<string, unknown>;
  if (!isUuid(tenantId) || typeof id !== 'string') return undefined;
  const parsed = parseEventId(id);
  return parsed === undefined ? undefined : { tenantId: tenantId.toLowerCase(), id: parsed };
}

function listenClientFactory(options: EventHubOptions): () => pg.Client | Promise<pg.Client> {
  if ('connect' in options) return options.connect;
  const { target } = options;
  return () =>
    new pg.Client({
      ...clientConfig(target, 'app'),
      application_name: 'svc-app-events',
      keepAlive: true,
    });
}

/**
 * One LISTEN connection per process fans new events out to in-process subscribers, each bound
 * to one tenant. On a notice for tenant T the hub reads T's new rows once (bursts coalesce into
 * one read per tenant) under withTenant(T) and offers them only to T's subscribers.
 */
export async function createEventHub(options: EventHubOptions): Promise<EventHub> {
  const hub = new Hub(options);
  await hub.start();
  return hub;
}

class Hub implements EventHub {
  readonly #db: AppDatabase;
  readonly #newClient: () => pg.Client | Promise<pg.Client>;
  readonly #heartbeatMs: number;
  readonly #maxQueue: number;
  readonly #pageSize: number;
  readonly #reconnectMinMs: number;
  readonly #reconnectMaxMs: number;
  readonly #onError: (error: unknown, context: string) => void;
  readonly #channels = new Map<string, TenantChannel>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #listener: pg.Client | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #reconnects = 0;
  #failedAttempts = 0;
  #closed = false;

  constructor(options: EventHubOptions) {
    this.#db = options.db;
    this.#newClient = listenClientFactory(options);
    this.#heartbeatMs = options.heartbeatMs ?? EVENT_HUB_DEFAULTS.heartbeatMs;
    this.#maxQueue = options.maxQueue ?? EVENT_HUB_DEFAULTS.maxQueue;
    this.#pageSize = Math.min(options.pageSize ?? EVENT_HUB_DEFAULTS.pageSize, this.#maxQueue);
    this.#reconnectMinMs = options.reconnectMinMs ?? EVENT_HUB_DEFAULTS.reconnectMinMs;
    this.#reconnectMaxMs = options.reconnectMaxMs ?? EVENT_HUB_DEFAULTS.reconnectMaxMs;
    this.#onError = options.onError ?? (() => undefined);
  }

  async start(): Promise<void> {
    await this.#listen();
    this.#heartbeat = setInterval(() => this.#beat(), this.#heartbeatMs);
    this.#heartbeat.unref();
  }

  async subscribe(tenantId: string, options: SubscribeOptions = {}): Promise<Subscription> {
    if (this.#closed) throw new Error('the event hub is closed');
    if (!isUuid(tenantId)) throw new TypeError('tenant id must be a uuid');
    const resumeAfter = this.#resumePoint(options.lastEventId);
    const tenant = tenantId.toLowerCase();
    const channel = this.#channel(tenant);
    const subscriber = new Subscriber({
      tenantId: tenant,
      maxQueue: this.#maxQueue,
      pageSize: this.#pageSize,
      readPage: (afterId, limit) => this.#readPage(tenant, afterId, limit),
      onClose: (s) => this.#detach(channel, s),
    });
    // Joined before positioning, so nothing the hub fetches from here on can pass it by.
    if (resumeAfter !== undefined) subscriber.startReplay(resumeAfter);
    channel.subscribers.add(subscriber);
    try {
      await channel.ready;
      // An id above the tenant's newest is not one of its events: resume from its newest.
      if (resumeAfter !== undefined)
        subscriber.clampReplay(await this.#db.withTenant(tenant, latestEventId));
    } catch (error) {
      subscriber.end('failed');
      throw error;
    }
    return subscriber;
  }

  status(): EventHubStatus {
    let subscribers = 0;
    for (const channel of this.#channels.values()) subscribers += channel.subscribers.size;
    return {
      listening: this.#listener !== undefined,
      tenants: this.#channels.size,
      subscribers,
      reconnects: this.#reconnects,
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const channel of [...this.#channels.values()])
      for (const subscriber of [...channel.subscribers]) subscriber.end('hub_closed');
    this.#channels.clear();
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => undefined);
  }

  #resumePoint(lastEventId: string | undefined): bigint | undefined {
    if (lastEventId === undefined) return undefined;
    const id = parseEventId(lastEventId);
    if (id === undefined) throw new TypeError('lastEventId must be a decimal event id');
    return id;
  }

  #channel(tenantId: string): TenantChannel {
    const existing = this.#channels.get(tenantId);
    if (existing) return existing;
    const channel: TenantChannel = {
      tenantId,
      subscribers: new Set(),
      cursor: undefined,
      ready: Promise.resolve(),
      fetching: false,
      dirty: false,
    };
    channel.ready = this.#position(channel);
    // The first subscriber awaits ready; later ones too, but none must see an unhandled rejection.
    channel.ready.catch(() => undefined);
    this.#channels.set(tenantId, channel);
    return channel;
  }

  /** Live delivery for a new tenant starts at its newest event at this moment. */
  async #position(channel: TenantChannel): Promise<void> {
    try {
      channel.cursor = await this.#db.withTenant(channel.tenantId, latestEventId);
    } catch (error) {
      if (this.#channels.get(channel.tenantId) === channel) this.#channels.delete(channel.tenantId);
      throw error;
    }
    if (channel.dirty) void this.#fetch(channel);
  }

  #detach(channel: TenantChannel, subscriber: Subscriber): void {
    channel.subscribers.delete(subscriber);
    if (channel.subscribers.size === 0 && this.#channels.get(channel.tenantId) === channel)
      this.#channels.delete(channel.tenantId);
  }

  async #readPage(tenantId: string, afterId: bigint, limit: number): Promise<StoredEvent[]> {
    try {
      const events = await this.#db.withTenant(tenantId, (tx) =>
        readEventsAfter(tx, afterId, limit),
      );
      return this.#ownedBy(tenantId, events);
    } catch (error) {
      this.#onError(error, `events: reading tenant ${tenantId}`);
      throw error;
    }
  }

  /** RLS already confines the read; a foreign row here would be a bug, so it is never passed on. */
  #ownedBy(tenantId: string, events: StoredEvent[]): StoredEvent[] {
    const own = events.filter((event) => event.tenantId === tenantId);
    if (own.length !== events.length)
      this.#onError(new Error('foreign rows in a tenant read'), `events: tenant ${tenantId}`);
    return own;
  }

  #onNotification(message: pg.Notification): void {
    if (message.channel !== EVENTS_CHANNEL) return;
    const notice = parseNotice(message.payload);
    if (!notice) return;
    const channel = this.#channels.get(notice.tenantId);
    if (!channel) return;
    if (channel.cursor !== undefined && notice.id <= channel.cursor) return;
    void this.#fetch(channel);
  }

  /**
   * Reads everything after the tenant's cursor and offers it to the tenant's subscribers.
   * Appends are serialized per tenant (sql/0008), so ids become visible in order and reading
   * "after the cursor" never skips one. A notice during a read only marks the channel dirty.
   */
  async #fetch(channel: TenantChannel): Promise<void> {
    if (!this.#isLive(channel)) return;
    if (channel.cursor === undefined || channel.fetching) {
      channel.dirty = true;
      return;
    }
    channel.fetching = true;
    try {
      do {
        channel.dirty = false;
        const events = await this.#readPage(channel.tenantId, channel.cursor, this.#pageSize);
        this.#deliver(channel, events);
        if (events.length === this.#pageSize) channel.dirty = true;
      } while (channel.dirty && this.#isLive(channel));
    } catch {
      channel.dirty = true;
      // While the LISTEN connection is down the database most likely is too: the reconnect
      // (with backoff) fetches every channel once it is back, so no retry storm meanwhile.
      if (this.#listener) this.#later(() => this.#fetch(channel), this.#reconnectMinMs);
    } finally {
      channel.fetching = false;
    }
  }

  #deliver(channel: TenantChannel, events: StoredEvent[]): void {
    const last = events.at(-1);
    if (!last) return;
    channel.cursor = BigInt(last.id);
    for (const subscriber of [...channel.subscribers]) subscriber.offer(events);
  }

  #isLive(channel: TenantChannel): boolean {
    return !this.#closed && this.#channels.get(channel.tenantId) === channel;
  }

  #beat(): void {
    for (const channel of this.#channels.values())
      for (const subscriber of channel.subscribers) subscriber.heartbeat();
    // A LISTEN connection can die without a TCP reset; a round trip finds out.
    const listener = this.#listener;
    listener?.query('SELECT 1').catch((error: unknown) => {
      this.#onError(error, 'events: LISTEN connection ping');
      listener.end().catch(() => undefined);
    });
  }

  async #listen(): Promise<void> {
    const client = await this.#newClient();
    client.on('notification', (message) => this.#onNotification(message));
    // pg emits 'error' and then 'end' for one failure; both lead to a single reconnect.
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('LISTEN connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#listener = client;
    this.#failedAttempts = 0;
  }

  #lost(client: pg.Client, error: unknown): void {
    if (this.#listener !== client || this.#closed) return;
    this.#listener = undefined;
    this.#onError(error, 'events: LISTEN connection lost');
    client.end().catch(() => undefined);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    const delay = Math.min(this.#reconnectMinMs * 2 ** this.#failedAttempts, this.#reconnectMaxMs);
    this.#later(() => this.#reconnect(), delay);
  }

  /** Notices sent while disconnected are gone; every tenant in use catches up from its cursor. */
  async #reconnect(): Promise<void> {
    try {
      await this.#listen();
    } catch (error) {
      this.#failedAttempts++;
      this.#onError(error, 'events: LISTEN reconnect failed');
      if (!this.#closed) this.#scheduleReconnect();
      return;
    }
    if (this.#closed) return;
    this.#reconnects++;
    for (const channel of this.#channels.values()) void this.#fetch(channel);
  }

  #later(fn: () => unknown, ms: number): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void fn();
    }, ms);
    this.#timers.add(timer);
  }
}
