// The events domain: each tenant's ordered event store (appended in the transaction of the
// change it records) and the one LISTEN/NOTIFY hub fanning it out to live subscribers.
import pg from 'pg';
import { isUuid } from '../../../contracts/uuid.ts';
import type { AppDatabase } from '../../db/pools.ts';
import { readEachTenant, type TenantRead } from '../../db/tenant-batch.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { databaseUnavailable } from '../../db/unavailable.ts';
import {
  latestEventId,
  parseEventId,
  readEventsAfter,
  type StoredEvent,
} from './event-repository.ts';
import { EventListener, type ListenSource } from './listener.ts';
import type { Notice, RevocationNotice } from './notice.ts';
import { Subscriber, type Subscription } from './subscription.ts';

export const EVENT_HUB_DEFAULTS = {
  heartbeatMs: 15_000,
  maxQueue: 1_000,
  pageSize: 200,
  reconnectMinMs: 100,
  reconnectMaxMs: 5_000,
  readConnections: 2,
  readWaitMs: 5_000,
  readQueue: 200,
  batchTenants: 200,
} as const;

interface EventHubCommonOptions {
  /**
   * The svc_app database. The hub reads on a small pool of its own with the same settings
   * (`readConnections`), every row under its tenant's RLS context.
   */
  db: AppDatabase;
  /** Connections of the hub's read pool; also how many batched live reads run at once. */
  readConnections?: number;
  /**
   * How long a read waits for one of them (the pool's connectionTimeoutMillis); and how many
   * may wait at all (`readQueue`): beyond either, the read fails at once as
   * DatabaseUnavailableError, so a new stream is answered 503 database_unavailable instead of
   * hanging (docs/events.md "Bounded reads").
   */
  readWaitMs?: number;
  readQueue?: number;
  /** Tenants read together in one transaction and one round trip. */
  batchTenants?: number;
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
export type EventHubOptions = EventHubCommonOptions & ListenSource;

export interface SubscribeOptions {
  /** Resume after this id (decimal digits), as sent back in Last-Event-ID. */
  lastEventId?: string;
}

/** Told of every tenant's new events (hints, as the notices themselves) and of reconnects. */
export interface NoticeObserver {
  notice(tenantId: string, id: bigint): void;
  /**
   * A revocation notice (sql/0027), told synchronously and before any event committed after
   * it is handed to a subscriber: the credential watch pauses the matching streams here.
   */
  revocation?(notice: RevocationNotice): void;
  /** The LISTEN connection is back; notices sent while it was down are gone. */
  reconnected(): void;
}

export interface EventHubStatus {
  listening: boolean;
  tenants: number;
  subscribers: number;
  reconnects: number;
  /** Barriers sent on the LISTEN connection (sync and page reads share them, see listener.ts). */
  barriers: number;
  /** Events handed to live subscribers, one per event per subscriber: the fan-out's work. */
  offered: number;
  /** Batched live reads (one transaction, one round trip each) and the tenants they read. */
  batches: number;
  batchedTenants: number;
}

export interface EventHub {
  /**
   * A subscription bound to one tenant for its whole life. Resolves once it is positioned:
   * every event committed after that is delivered, and with lastEventId every event after
   * that id is delivered first.
   */
  subscribe(tenantId: string, options?: SubscribeOptions): Promise<Subscription>;
  /** Observes every notice of every tenant (the projector's wake-up); returns the unsubscribe. */
  watch(observer: NoticeObserver): () => void;
  /**
   * Resolves once every notice committed before the call has been handed to the observers;
   * rejects while the LISTEN connection is down.
   */
  sync(): Promise<void>;
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

/** The connection settings of the app pool, for the hub's own small read pool. */
function readPool(db: AppDatabase, max: number, waitMs: number): pg.Pool {
  const pool = new pg.Pool({
    ...db.pool.options,
    // pg-pool keeps the password off the enumerable options (so it is never logged).
    password: db.pool.options.password,
    max,
    connectionTimeoutMillis: waitMs,
    idleTimeoutMillis: 30_000,
    application_name: 'svc-app-events-reads',
  });
  // An idle client's network error must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return pool;
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
  readonly #pool: pg.Pool;
  readonly #listener: EventListener;
  readonly #heartbeatMs: number;
  readonly #maxQueue: number;
  readonly #pageSize: number;
  readonly #retryMs: number;
  readonly #readQueue: number;
  readonly #maxBatches: number;
  readonly #batchTenants: number;
  readonly #onError: (error: unknown, context: string) => void;
  readonly #channels = new Map<string, TenantChannel>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #observers = new Set<NoticeObserver>();
  #heartbeat: NodeJS.Timeout | undefined;
  #closed = false;
  #offered = 0;
  /** Channels with news, waiting for the next batched read (in arrival order). */
  readonly #due = new Set<TenantChannel>();
  #flushQueued = false;
  #batchesInFlight = 0;
  #batches = 0;
  #batchedTenants = 0;

  constructor(options: EventHubOptions) {
    const connections = options.readConnections ?? EVENT_HUB_DEFAULTS.readConnections;
    this.#pool = readPool(
      options.db,
      connections,
      options.readWaitMs ?? EVENT_HUB_DEFAULTS.readWaitMs,
    );
    this.#readQueue = options.readQueue ?? EVENT_HUB_DEFAULTS.readQueue;
    this.#maxBatches = connections;
    this.#batchTenants = options.batchTenants ?? EVENT_HUB_DEFAULTS.batchTenants;
    this.#heartbeatMs = options.heartbeatMs ?? EVENT_HUB_DEFAULTS.heartbeatMs;
    this.#maxQueue = options.maxQueue ?? EVENT_HUB_DEFAULTS.maxQueue;
    this.#pageSize = Math.min(options.pageSize ?? EVENT_HUB_DEFAULTS.pageSize, this.#maxQueue);
    this.#retryMs = options.reconnectMinMs ?? EVENT_HUB_DEFAULTS.reconnectMinMs;
    this.#onError = options.onError ?? (() => undefined);
    this.#listener = new EventListener({
      source: options,
      reconnectMinMs: this.#retryMs,
      reconnectMaxMs: options.reconnectMaxMs ?? EVENT_HUB_DEFAULTS.reconnectMaxMs,
      onNotice: (notice) => this.#onNotice(notice),
      onRevocation: (notice) => {
        for (const observer of this.#observers) observer.revocation?.(notice);
      },
      onReconnect: () => this.#catchUp(),
      onError: this.#onError,
      later: (fn, ms) => this.#later(fn, ms),
    });
  }

  async start(): Promise<void> {
    await this.#listener.start();
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
        subscriber.clampReplay(await this.#readOne(tenant, latestEventId));
    } catch (error) {
      subscriber.end('failed');
      throw error;
    }
    return subscriber;
  }

  watch(observer: NoticeObserver): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }

  sync(): Promise<void> {
    return this.#listener.sync();
  }

  status(): EventHubStatus {
    let subscribers = 0;
    for (const channel of this.#channels.values()) subscribers += channel.subscribers.size;
    return {
      listening: this.#listener.listening,
      tenants: this.#channels.size,
      subscribers,
      reconnects: this.#listener.reconnects,
      barriers: this.#listener.barriers,
      offered: this.#offered,
      batches: this.#batches,
      batchedTenants: this.#batchedTenants,
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
    this.#due.clear();
    await this.#listener.close();
    await this.#pool.end();
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
      channel.cursor = await this.#readOne(channel.tenantId, latestEventId);
    } catch (error) {
      if (this.#channels.get(channel.tenantId) === channel) this.#channels.delete(channel.tenantId);
      throw error;
    }
    if (channel.dirty) this.#fetch(channel);
  }

  #detach(channel: TenantChannel, subscriber: Subscriber): void {
    channel.subscribers.delete(subscriber);
    if (channel.subscribers.size === 0 && this.#channels.get(channel.tenantId) === channel)
      this.#channels.delete(channel.tenantId);
  }

  /**
   * Every page is read, then synced with the LISTEN connection before anyone gets it: any
   * revocation that committed before an event on the page committed has then been told to the
   * observers (the credential watch), so a revoked stream is paused before that event reaches
   * it (docs/auth.md, open event streams) — whichever notice triggered the read. While the connection is down
   * nothing is handed on; the reconnect re-checks every credential, then catches up.
   */
  async #readPage(tenantId: string, afterId: bigint, limit: number): Promise<StoredEvent[]> {
    const [page] = await this.#readPages([{ tenantId, afterId }], limit);
    return page ?? [];
  }

  /**
   * Pages of several tenants in one transaction and one round trip (readEachTenant: each
   * tenant's read runs under its own context), then one barrier for all of them.
   */
  async #readPages(
    reads: readonly { tenantId: string; afterId: bigint }[],
    limit: number,
  ): Promise<StoredEvent[][]> {
    const afterIds = new Map(reads.map((r) => [r.tenantId, r.afterId]));
    try {
      const pages = await this.#read(
        reads.map((r) => r.tenantId),
        (tx, tenantId) => readEventsAfter(tx, afterIds.get(tenantId) ?? 0n, limit),
      );
      if (pages.some((page) => page.length > 0)) await this.#listener.sync();
      return pages.map((page, i) => this.#ownedBy(reads[i]?.tenantId ?? '', page));
    } catch (error) {
      this.#onError(error, `events: reading ${reads.length} tenant(s)`);
      throw error;
    }
  }

  async #readOne<T>(tenantId: string, read: (tx: TenantTx) => Promise<T>): Promise<T> {
    const [value] = await this.#read([tenantId], read);
    return value as T;
  }

  /**
   * Every read of the hub, on its own pool: bounded in connections, in waiting time and in
   * waiters, so a flood of new streams (a replica's viewers reconnecting at once) is refused
   * early instead of queueing without end, and never takes the API's connections.
   */
  #read<T>(tenantIds: readonly string[], read: TenantRead<T>): Promise<T[]> {
    if (this.#pool.waitingCount >= this.#readQueue)
      return Promise.reject(
        databaseUnavailable(new Error(`${this.#pool.waitingCount} event-hub reads are waiting`)),
      );
    return readEachTenant(this.#pool, tenantIds, read);
  }

  /** RLS already confines the read; a foreign row here would be a bug, so it is never passed on. */
  #ownedBy(tenantId: string, events: StoredEvent[]): StoredEvent[] {
    const own = events.filter((event) => event.tenantId === tenantId);
    if (own.length !== events.length)
      this.#onError(new Error('foreign rows in a tenant read'), `events: tenant ${tenantId}`);
    return own;
  }

  #onNotice(notice: Notice): void {
    for (const observer of this.#observers) observer.notice(notice.tenantId, notice.id);
    const channel = this.#channels.get(notice.tenantId);
    if (!channel) return;
    if (channel.cursor !== undefined && notice.id <= channel.cursor) return;
    this.#fetch(channel);
  }

  /**
   * Marks the tenant for the next batched read. Appends are serialized per tenant (sql/0008),
   * so ids become visible in order and reading "after the cursor" never skips one. A notice
   * while the tenant is being read only marks it dirty: it is read again right after.
   */
  #fetch(channel: TenantChannel): void {
    if (!this.#isLive(channel)) return;
    if (channel.cursor === undefined || channel.fetching) {
      channel.dirty = true;
      return;
    }
    this.#due.add(channel);
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    // After the current I/O callbacks: pg hands over every notice of one socket read
    // synchronously, so a burst's tenants (and, under load, a whole tick's) share one read.
    setImmediate(() => {
      this.#flushQueued = false;
      this.#flush();
    });
  }

  /** Starts batched reads of the due tenants, at most one per read connection at a time. */
  #flush(): void {
    while (!this.#closed && this.#due.size > 0 && this.#batchesInFlight < this.#maxBatches) {
      const batch: TenantChannel[] = [];
      for (const channel of this.#due) {
        this.#due.delete(channel);
        if (this.#isLive(channel) && !channel.fetching) batch.push(channel);
        if (batch.length >= this.#batchTenants) break;
      }
      if (batch.length > 0) void this.#readBatch(batch);
    }
  }

  async #readBatch(batch: TenantChannel[]): Promise<void> {
    this.#batchesInFlight++;
    this.#batches++;
    this.#batchedTenants += batch.length;
    for (const channel of batch) {
      channel.fetching = true;
      channel.dirty = false;
    }
    let pages: StoredEvent[][] | undefined;
    try {
      pages = await this.#readPages(
        batch.map((c) => ({ tenantId: c.tenantId, afterId: c.cursor ?? 0n })),
        this.#pageSize,
      );
    } catch {
      // While the LISTEN connection is down the database most likely is too: the reconnect
      // (with backoff) fetches every channel once it is back, so no retry storm meanwhile.
      if (this.#listener.listening)
        this.#later(() => {
          for (const channel of batch) this.#fetch(channel);
        }, this.#retryMs);
    } finally {
      this.#batchesInFlight--;
      for (const channel of batch) channel.fetching = false;
    }
    batch.forEach((channel, i) => {
      const page = pages?.[i];
      if (!page || !this.#isLive(channel)) return;
      this.#deliver(channel, page);
      // A full page: there is more. A notice during the read: there may be.
      if (page.length === this.#pageSize || channel.dirty) this.#fetch(channel);
    });
    this.#flush();
  }

  #deliver(channel: TenantChannel, events: StoredEvent[]): void {
    const last = events.at(-1);
    if (!last) return;
    channel.cursor = BigInt(last.id);
    // The same event objects go to every subscriber: the stream encodes each one once.
    for (const subscriber of [...channel.subscribers]) subscriber.offer(events);
    this.#offered += events.length * channel.subscribers.size;
  }

  #isLive(channel: TenantChannel): boolean {
    return !this.#closed && this.#channels.get(channel.tenantId) === channel;
  }

  #beat(): void {
    for (const channel of this.#channels.values())
      for (const subscriber of channel.subscribers) subscriber.heartbeat();
    this.#listener.ping();
  }

  /** Notices sent while disconnected are gone; every tenant in use catches up from its cursor. */
  #catchUp(): void {
    for (const observer of this.#observers) observer.reconnected();
    for (const channel of this.#channels.values()) this.#fetch(channel);
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
