// The events domain: each tenant's ordered event store (appended in the transaction of the
// change it records) and the one LISTEN/NOTIFY hub fanning it out to live subscribers.
import { isUuid } from '../../../contracts/uuid.ts';
import type { AppDatabase } from '../../db/pools.ts';
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
  readonly #listener: EventListener;
  readonly #heartbeatMs: number;
  readonly #maxQueue: number;
  readonly #pageSize: number;
  readonly #retryMs: number;
  readonly #onError: (error: unknown, context: string) => void;
  readonly #channels = new Map<string, TenantChannel>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #observers = new Set<NoticeObserver>();
  #heartbeat: NodeJS.Timeout | undefined;
  #closed = false;
  #offered = 0;

  constructor(options: EventHubOptions) {
    this.#db = options.db;
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
        subscriber.clampReplay(await this.#db.withTenant(tenant, latestEventId));
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
    await this.#listener.close();
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

  /**
   * Every page is read, then synced with the LISTEN connection before anyone gets it: any
   * revocation that committed before an event on the page committed has then been told to the
   * observers (the credential watch), so a revoked stream is paused before that event reaches
   * it (docs/auth.md, open event streams) — whichever notice triggered the read. While the connection is down
   * nothing is handed on; the reconnect re-checks every credential, then catches up.
   */
  async #readPage(tenantId: string, afterId: bigint, limit: number): Promise<StoredEvent[]> {
    try {
      // A unit of its own: BEGIN, the tenant context and the read leave in one round trip on
      // the pipelined pool, and the connection goes back as the COMMIT is written, not three
      // round trips later (one read per tenant notice, 1,000 a second at fleet size).
      const events = await this.#db.unitOfWork(() =>
        this.#db.withTenant(tenantId, (tx) => readEventsAfter(tx, afterId, limit)),
      );
      if (events.length > 0) await this.#listener.sync();
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

  #onNotice(notice: Notice): void {
    for (const observer of this.#observers) observer.notice(notice.tenantId, notice.id);
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
      if (this.#listener.listening) this.#later(() => this.#fetch(channel), this.#retryMs);
    } finally {
      channel.fetching = false;
    }
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
