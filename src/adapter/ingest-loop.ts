import type { Static } from 'typebox';
import type { WazuhAlert } from '../../contracts/internal.ts';
import type { Logger } from '../log/index.ts';
import { backoffMs, pause } from './backoff.ts';
import { type IndexedAlert, type IndexerClient, IndexerError, type SortValue } from './indexer.ts';
import type { InternalClient } from './svc-client.ts';
import { authorized, type TokenSource } from './token.ts';

/** svc takes up to 4 MiB per batch; staying below leaves room for the envelope. */
const MAX_BATCH_BYTES = 3.5 * 1024 * 1024;

/** What the heartbeat reports about ingest (docs/adapter.md "Watching it"). */
export interface IngestStatus {
  ingest: 'starting' | 'running' | 'backing_off' | 'stopped';
  indexer: 'unknown' | 'reachable' | 'unreachable';
  /** Age of the newest delivered alert while behind the indexer; 0 once caught up. */
  lag_seconds: number | null;
  alerts_delivered: number;
  alerts_duplicate: number;
  /** Alerts svc refused as malformed (logged with their source id, then passed over). */
  alerts_refused: number;
  checkpoint_loaded: boolean;
}

export interface IngestDeps {
  client: InternalClient;
  tokens: TokenSource;
  indexer: IndexerClient;
  index: string;
  batchSize: number;
  pollMs: number;
  logger: Logger;
  /** Aborted on SIGTERM: no new search or post starts, the post in flight completes. */
  signal: AbortSignal;
}

/** A rejected call that is worth trying again (svc or the indexer down, no token yet). */
function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Splits a page so no post exceeds svc's body limit (each alert is itself ≤ 64 KiB). */
function bySize(page: IndexedAlert[]): IndexedAlert[][] {
  const batches: IndexedAlert[][] = [];
  let current: IndexedAlert[] = [];
  let bytes = 0;
  for (const alert of page) {
    const size = Buffer.byteLength(JSON.stringify(alert.source));
    if (current.length > 0 && bytes + size > MAX_BATCH_BYTES) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(alert);
    bytes += size + 1;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** Seconds of a 429's `Retry-After` header (or body `retry_after`), else undefined. */
function retryAfterMs(headers: Headers, body: unknown): number | undefined {
  const header = Number(headers.get('retry-after'));
  if (Number.isFinite(header) && header > 0) return header * 1000;
  const field = (body as { retry_after?: unknown } | undefined)?.retry_after;
  return typeof field === 'number' && field > 0 ? field * 1000 : undefined;
}

/** Only an error about the one alert sent (path `/alerts/0…`) proves that alert unstorable. */
function refusesTheAlert(status: number, body: unknown): boolean {
  if (status === 413) return true;
  if (status !== 400) return false;
  const errors = (body as { errors?: { path?: unknown }[] } | undefined)?.errors;
  return (
    Array.isArray(errors) &&
    errors.length > 0 &&
    errors.every((e) => typeof e.path === 'string' && /^\/alerts\/0(\/|$)/.test(e.path))
  );
}

function alertTime(alert: IndexedAlert | undefined): number | undefined {
  const t = alert?.sort[0];
  return typeof t === 'number' ? t : undefined;
}

/**
 * The ingest loop: resume from svc's checkpoint, page the indexer with search_after, post each
 * batch together with the position after it, and move on only once svc answered 200 — so the
 * checkpoint svc stores is always the position after alerts it has stored (at-least-once; svc
 * drops repeats by source id). Nothing is dropped on failure: 429 waits out Retry-After,
 * 5xx and connection errors back off exponentially (with jitter, ≤ 30 s) and try the same
 * batch again. Only an alert svc refuses as malformed on its own is passed over, loudly.
 */
export function createIngestLoop(deps: IngestDeps) {
  const { client, tokens, indexer, logger, signal } = deps;
  const status: IngestStatus = {
    ingest: 'starting',
    indexer: 'unknown',
    lag_seconds: null,
    alerts_delivered: 0,
    alerts_duplicate: 0,
    alerts_refused: 0,
    checkpoint_loaded: false,
  };

  async function wait(attempt: number, reason: string, error?: unknown): Promise<boolean> {
    status.ingest = 'backing_off';
    const ms = backoffMs(attempt);
    logger.warn(
      { attempt, wait_ms: ms, err: error === undefined ? undefined : describe(error) },
      reason,
    );
    return pause(ms, signal);
  }

  /** svc's stored position; undefined only when stopped before svc answered. */
  async function loadCheckpoint(): Promise<{ after: SortValue[] | undefined } | undefined> {
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        const res = await authorized(tokens, (headers) => client.checkpoint({ headers }));
        if (res.status === 200) {
          status.checkpoint_loaded = true;
          const stored = res.body.checkpoint;
          if (stored?.index !== undefined && stored.index !== deps.index) {
            logger.warn(
              { stored: stored.index, configured: deps.index },
              'the checkpoint was taken on another index pattern; continuing from its position',
            );
          }
          logger.info(
            { checkpoint: stored, alerts_total: res.body.alerts_total },
            stored
              ? 'resuming after the stored checkpoint'
              : 'no checkpoint yet: reading from the oldest alert',
          );
          return { after: stored?.search_after };
        }
        if (!(await wait(attempt, `svc answered ${res.status} to the checkpoint read`)))
          return undefined;
      } catch (error) {
        if (!(await wait(attempt, 'cannot read the checkpoint from svc', error))) return undefined;
      }
    }
    return undefined;
  }

  async function search(after: SortValue[] | undefined): Promise<IndexedAlert[] | undefined> {
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        const page = await indexer.search(after, deps.batchSize);
        if (status.indexer !== 'reachable') logger.info('indexer reachable');
        status.indexer = 'reachable';
        return page;
      } catch (error) {
        status.indexer = 'unreachable';
        if (!(error instanceof IndexerError)) throw error;
        if (!(await wait(attempt, 'indexer search failed', error))) return undefined;
      }
    }
    return undefined;
  }

  /** True once svc stored the batch (or refused one malformed alert); false when stopped. */
  async function deliver(batch: IndexedAlert[]): Promise<boolean> {
    const last = batch[batch.length - 1] as IndexedAlert;
    const body = {
      // Sent exactly as the indexer holds them: svc validates each alert (and refuses it alone).
      alerts: batch.map((a) => a.source) as Static<typeof WazuhAlert>[],
      checkpoint: { search_after: last.sort, index: deps.index },
    };
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0 && signal.aborted) return false;
      let res: Awaited<ReturnType<InternalClient['alerts']>>;
      try {
        res = await authorized(tokens, (headers) => client.alerts({ body, headers }));
      } catch (error) {
        if (!(await wait(attempt, 'cannot post alerts to svc', error))) return false;
        continue;
      }
      if (res.status === 200) {
        status.ingest = 'running';
        status.alerts_delivered += res.body.accepted;
        status.alerts_duplicate += res.body.duplicates;
        logger.debug(
          { accepted: res.body.accepted, duplicates: res.body.duplicates },
          'batch stored',
        );
        return true;
      }
      if (res.status === 429) {
        status.ingest = 'backing_off';
        const ms = retryAfterMs(res.headers, res.body) ?? backoffMs(attempt);
        logger.info({ wait_ms: ms }, 'svc is rate limiting ingest; waiting');
        if (!(await pause(ms, signal))) return false;
        attempt = -1;
        continue;
      }
      if ((res.status === 400 || res.status === 413) && batch.length > 1) {
        // Halve until the alert svc cannot take is alone; the others still go in.
        const half = Math.ceil(batch.length / 2);
        return (await deliver(batch.slice(0, half))) && deliver(batch.slice(half));
      }
      if (refusesTheAlert(res.status, res.body)) {
        status.alerts_refused += 1;
        logger.error(
          { source_id: last.source.id, index: last.index, problem: res.body },
          'svc refused this alert as malformed; passing over it',
        );
        return true;
      }
      if (!(await wait(attempt, `svc answered ${res.status} to an alert batch`))) return false;
    }
  }

  return {
    status,
    async run(): Promise<void> {
      const start = await loadCheckpoint();
      let after = start?.after;
      while (start && !signal.aborted) {
        const page = await search(after);
        if (!page) break;
        for (const batch of bySize(page)) {
          if (!(await deliver(batch))) {
            status.ingest = 'stopped';
            return;
          }
          after = batch[batch.length - 1]?.sort;
          const newest = alertTime(batch[batch.length - 1]);
          status.lag_seconds =
            newest === undefined ? null : Math.max(0, (Date.now() - newest) / 1000);
          if (signal.aborted) break;
        }
        if (page.length < deps.batchSize) {
          // Caught up with the indexer: nothing is waiting, so there is no lag to report.
          status.lag_seconds = 0;
          if (status.ingest !== 'running') status.ingest = 'running';
          await pause(deps.pollMs, signal);
        }
      }
      status.ingest = 'stopped';
    },
  };
}

export type IngestLoop = ReturnType<typeof createIngestLoop>;
