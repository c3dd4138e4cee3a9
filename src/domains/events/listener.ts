import pg from 'pg';
import { clientConfig, type DatabaseTarget } from '../../db/target.ts';
import {
  EVENTS_CHANNEL,
  listenForEvents,
  listenForRevocations,
  pingListener,
  REVOCATION_CHANNEL,
} from './event-repository.ts';
import { type Notice, parseNotice, parseRevocation, type RevocationNotice } from './notice.ts';

/** Where the LISTEN connection comes from: svc_app on the target, or a client factory. */
export type ListenSource =
  | { target: DatabaseTarget }
  | { connect: () => pg.Client | Promise<pg.Client> };

export interface ListenerOptions {
  source: ListenSource;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  onNotice: (notice: Notice) => void;
  /** Handled synchronously, before any notification that follows it is looked at. */
  onRevocation: (notice: RevocationNotice) => void;
  /** The connection is back after a loss; notices sent while it was down are gone. */
  onReconnect: () => void;
  onError: (error: unknown, context: string) => void;
  /** Runs fn after ms unless the owner has closed meanwhile. */
  later: (fn: () => unknown, ms: number) => void;
}

function clientFactory(source: ListenSource): () => pg.Client | Promise<pg.Client> {
  if ('connect' in source) return source.connect;
  const { target } = source;
  return () =>
    new pg.Client({
      ...clientConfig(target, 'app'),
      application_name: 'svc-app-events',
      keepAlive: true,
    });
}

/** The one LISTEN connection of a process, re-established with backoff when it is lost. */
export class EventListener {
  readonly #options: ListenerOptions;
  readonly #newClient: () => pg.Client | Promise<pg.Client>;
  #client: pg.Client | undefined;
  #reconnects = 0;
  #failedAttempts = 0;
  #closed = false;
  #barrier: Promise<void> | undefined;
  #nextBarrier: { client: pg.Client; promise: Promise<void> } | undefined;
  #barriers = 0;

  constructor(options: ListenerOptions) {
    this.#options = options;
    this.#newClient = clientFactory(options.source);
  }

  get listening(): boolean {
    return this.#client !== undefined;
  }

  get reconnects(): number {
    return this.#reconnects;
  }

  start(): Promise<void> {
    return this.#listen();
  }

  /** A LISTEN connection can die without a TCP reset; a round trip finds out. */
  ping(): void {
    const client = this.#client;
    if (!client) return;
    pingListener(client).catch((error: unknown) => {
      this.#options.onError(error, 'events: LISTEN connection ping');
      client.end().catch(() => undefined);
    });
  }

  /**
   * Resolves once every notification committed before this call has been handled (see
   * pingListener); rejects while the connection is down, since notices may be lost then.
   *
   * Coalesced: at most one barrier is in flight, plus one queued "next" that every caller
   * arriving meanwhile shares. Still correct for each caller: a barrier covers every
   * notification committed before it was *sent* (the server delivers them on this connection
   * ahead of its answer), so a caller may only share a barrier sent after its call. The one in
   * flight was sent before, so later callers wait for the next, which is sent once the current
   * has ended, i.e. after all of their calls; nobody joins a barrier that is already sent.
   */
  sync(): Promise<void> {
    const client = this.#client;
    if (!client) return Promise.reject(new Error('the LISTEN connection is down'));
    if (this.#nextBarrier?.client === client) return this.#nextBarrier.promise;
    const current = this.#barrier;
    if (!current) return this.#sendBarrier(client);
    const promise = current
      .catch(() => undefined)
      .then(() => {
        if (this.#nextBarrier?.promise === promise) this.#nextBarrier = undefined;
        return this.#sendBarrier(client);
      });
    this.#nextBarrier = { client, promise };
    return promise;
  }

  /**
   * On the connection that was current at the callers' call only: notices committed while it
   * was being replaced are lost, and a barrier on the new one would vouch for them.
   */
  #sendBarrier(client: pg.Client): Promise<void> {
    if (this.#client !== client)
      return Promise.reject(new Error('the LISTEN connection was lost meanwhile'));
    const barrier = pingListener(client).finally(() => {
      if (this.#barrier === barrier) this.#barrier = undefined;
    });
    this.#barrier = barrier;
    this.#barriers++;
    return barrier;
  }

  /** Barriers sent so far (each one round trip on the LISTEN connection). */
  get barriers(): number {
    return this.#barriers;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  #onNotification(message: pg.Notification): void {
    if (message.channel === REVOCATION_CHANNEL) {
      const revocation = parseRevocation(message.payload);
      if (revocation) this.#options.onRevocation(revocation);
      return;
    }
    if (message.channel !== EVENTS_CHANNEL) return;
    const notice = parseNotice(message.payload);
    if (notice) this.#options.onNotice(notice);
  }

  async #listen(): Promise<void> {
    const client = await this.#newClient();
    client.on('notification', (message) => this.#onNotification(message));
    // pg emits 'error' and then 'end' for one failure; both lead to a single reconnect.
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('LISTEN connection ended')));
    try {
      await client.connect();
      await listenForRevocations(client);
      await listenForEvents(client);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#failedAttempts = 0;
  }

  #lost(client: pg.Client, error: unknown): void {
    if (this.#client !== client || this.#closed) return;
    this.#client = undefined;
    this.#options.onError(error, 'events: LISTEN connection lost');
    client.end().catch(() => undefined);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    const { reconnectMinMs, reconnectMaxMs } = this.#options;
    const delay = Math.min(reconnectMinMs * 2 ** this.#failedAttempts, reconnectMaxMs);
    this.#options.later(() => this.#reconnect(), delay);
  }

  async #reconnect(): Promise<void> {
    try {
      await this.#listen();
    } catch (error) {
      this.#failedAttempts++;
      this.#options.onError(error, 'events: LISTEN reconnect failed');
      if (!this.#closed) this.#scheduleReconnect();
      return;
    }
    if (this.#closed) return;
    this.#reconnects++;
    this.#options.onReconnect();
  }
}
