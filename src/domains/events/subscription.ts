import type { StoredEvent } from './event-repository.ts';

/** What a subscriber reads: events of its tenant, and idle heartbeats for keep-alives. */
export type HubMessage = { kind: 'event'; event: StoredEvent } | { kind: 'heartbeat' };

/**
 * Why a subscription ended: the consumer left, it fell more than maxQueue events behind,
 * the hub shut down, or its replay could not be read.
 */
export type CloseReason = 'unsubscribed' | 'overflow' | 'hub_closed' | 'failed';

export interface Subscription extends AsyncIterableIterator<HubMessage, undefined> {
  readonly tenantId: string;
  /** Events waiting to be read. */
  readonly queued: number;
  readonly closeReason: CloseReason | undefined;
  /** Resolves when the subscription ends, with the reason. */
  readonly closed: Promise<CloseReason>;
  close(): void;
}

/** Reads one page of this tenant's events after an id, under the tenant's RLS context. */
export type PageReader = (afterId: bigint, limit: number) => Promise<StoredEvent[]>;

export interface SubscriberOptions {
  tenantId: string;
  maxQueue: number;
  pageSize: number;
  readPage: PageReader;
  onClose: (subscriber: Subscriber, reason: CloseReason) => void;
}

type Result = IteratorResult<HubMessage, undefined>;
const DONE: Result = { done: true, value: undefined };

function eventResult(event: StoredEvent): Result {
  return { done: false, value: { kind: 'event', event } };
}

/**
 * One consumer bound to one tenant. Live events are offered by the hub; a resuming consumer
 * first pages through the store (paced by its own reads, so a long history never piles up in
 * memory) while live events wait in a bounded side buffer, then switches to live. `lastId`
 * is the highest id handed to the queue; anything at or below it is a duplicate.
 */
export class Subscriber implements Subscription {
  readonly tenantId: string;
  readonly closed: Promise<CloseReason>;
  #reason: CloseReason | undefined;
  #resolveClosed: (reason: CloseReason) => void = () => undefined;
  #queue: StoredEvent[] = [];
  #waiters: ((result: Result) => void)[] = [];
  #heartbeatDue = false;
  #lastId: bigint | undefined;
  #replay: { buffer: StoredEvent[]; page: Promise<void> | undefined } | undefined;
  readonly #options: SubscriberOptions;

  constructor(options: SubscriberOptions) {
    this.tenantId = options.tenantId;
    this.#options = options;
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
  }

  get queued(): number {
    return this.#queue.length;
  }

  get closeReason(): CloseReason | undefined {
    return this.#reason;
  }

  /** Puts the subscriber in replay mode from `afterId` (exclusive). Call before any offer. */
  startReplay(afterId: bigint): void {
    this.#lastId = afterId;
    this.#replay = { buffer: [], page: undefined };
  }

  /** Moves the replay start down (never up) once the tenant's latest id is known. */
  clampReplay(latestId: bigint): void {
    if (this.#lastId !== undefined && this.#lastId > latestId) this.#lastId = latestId;
  }

  /** New events of this tenant, ascending by id, from the hub's fetch. */
  offer(events: readonly StoredEvent[]): void {
    for (const event of events) {
      if (this.#reason !== undefined) return;
      if (this.#replay) this.#buffer(event);
      else this.#enqueue(event);
    }
  }

  heartbeat(): void {
    const waiter = this.#waiters.shift();
    if (waiter) waiter({ done: false, value: { kind: 'heartbeat' } });
    else if (this.#queue.length === 0) this.#heartbeatDue = true;
  }

  async next(): Promise<Result> {
    while (this.#reason === undefined) {
      const event = this.#queue.shift();
      if (event) return eventResult(event);
      if (!this.#replay) break;
      await this.#nextReplayPage();
    }
    if (this.#reason !== undefined) return DONE;
    if (this.#heartbeatDue) {
      this.#heartbeatDue = false;
      return { done: false, value: { kind: 'heartbeat' } };
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  async return(): Promise<Result> {
    this.close();
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  close(): void {
    this.end('unsubscribed');
  }

  end(reason: CloseReason): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#queue = [];
    this.#replay = undefined;
    for (const waiter of this.#waiters.splice(0)) waiter(DONE);
    this.#resolveClosed(reason);
    this.#options.onClose(this, reason);
  }

  #buffer(event: StoredEvent): void {
    const buffer = this.#replay?.buffer;
    if (!buffer) return;
    if (buffer.length >= this.#options.maxQueue) this.end('overflow');
    else buffer.push(event);
  }

  #enqueue(event: StoredEvent): void {
    const id = BigInt(event.id);
    if (this.#lastId !== undefined && id <= this.#lastId) return;
    this.#lastId = id;
    const waiter = this.#waiters.shift();
    if (waiter) waiter(eventResult(event));
    else if (this.#queue.length >= this.#options.maxQueue) this.end('overflow');
    else this.#queue.push(event);
  }

  /** One page at a time even if next() is called concurrently. */
  async #nextReplayPage(): Promise<void> {
    const replay = this.#replay;
    if (!replay) return;
    replay.page ??= this.#readReplayPage(replay).finally(() => {
      replay.page = undefined;
    });
    await replay.page;
  }

  async #readReplayPage(replay: { buffer: StoredEvent[] }): Promise<void> {
    const { pageSize, readPage } = this.#options;
    let page: StoredEvent[];
    try {
      page = await readPage(this.#lastId ?? 0n, pageSize);
    } catch {
      this.end('failed');
      return;
    }
    if (this.#replay !== replay) return;
    for (const event of page) this.#appendReplayed(event);
    if (page.length < pageSize) this.#goLive(replay.buffer);
  }

  #appendReplayed(event: StoredEvent): void {
    this.#lastId = BigInt(event.id);
    this.#queue.push(event);
  }

  /**
   * The last page was read after the hub had positioned this tenant, so it covers everything
   * the hub fetched before this subscriber joined; the buffer holds what the hub fetched
   * since. Their overlap is dropped by id, and from here on the hub's offers go straight in.
   */
  #goLive(buffer: StoredEvent[]): void {
    this.#replay = undefined;
    for (const event of buffer) {
      const id = BigInt(event.id);
      if (this.#lastId !== undefined && id <= this.#lastId) continue;
      this.#appendReplayed(event);
    }
  }
}
