import type { Static } from 'typebox';
import type { IngestCheckpoint, WazuhAlert } from '../../contracts/internal.ts';
import type { Logger } from '../log/index.ts';
import type { AdapterMetrics } from './adapter-metrics.ts';
import {
  bucketCounts,
  compareSort,
  STAMPED_START,
  stampedAt,
  stampedBelow,
  stampedBetween,
  stampedPage,
  unstampedCount,
  unstampedPage,
} from './alert-order.ts';
import { backoffMs, pause } from './backoff.ts';
import {
  type IndexedAlert,
  type IndexerClient,
  IndexerError,
  type SearchPurpose,
  type SortValue,
} from './indexer.ts';
import { createLateWindow, type LateWindow } from './late-window.ts';
import type { InternalClient } from './svc-client.ts';
import { authorized, type TokenSource } from './token.ts';

/** svc takes up to 4 MiB per batch; staying below leaves room for the envelope. */
const MAX_BATCH_BYTES = 3.5 * 1024 * 1024;
/** The below-window and unstamped counts run with every this many window checks. */
const COUNT_EVERY = 10;
/** At most one window check this often while caught up (each is one aggregation). */
const CHECK_EVERY_MS = 1_000;
/** Documents per re-read page (OpenSearch's default max_result_window is 10,000). */
const REREAD_PAGE = 1_000;

type Checkpoint = Static<typeof IngestCheckpoint>;

/** What the heartbeat reports about ingest (docs/adapter.md "Watching it"). */
export interface IngestStatus {
  ingest: 'starting' | 'running' | 'backing_off' | 'stopped';
  indexer: 'unknown' | 'reachable' | 'unreachable';
  /** Age of the newest delivered alert's ingest stamp while behind the indexer; 0 once caught up. */
  lag_seconds: number | null;
  alerts_delivered: number;
  alerts_duplicate: number;
  /** Alerts svc refused as malformed (logged with their source id, then passed over). */
  alerts_refused: number;
  /**
   * `ingest_time` while every document carries the ingest stamp; `alert_time` once documents
   * without it exist (read in alert-time order, with its late-indexing limit).
   */
  ingest_order: 'ingest_time' | 'alert_time';
  /** Alerts that became searchable within the lateness window after newer ones were read. */
  alerts_late_in_window: number;
  /** Alerts that became searchable later than the window: counted (since the first adapter). */
  alerts_late: number;
  /** Of those, found and stored by svc. */
  alerts_late_ingested: number;
  checkpoint_loaded: boolean;
}

export interface IngestDeps {
  client: InternalClient;
  tokens: TokenSource;
  indexer: IndexerClient;
  index: string;
  batchSize: number;
  pollMs: number;
  /** The lateness window: how long after its stamp a document may become searchable. */
  lateMs: number;
  metrics: AdapterMetrics;
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

const stampOf = (alert: IndexedAlert) => alert.sort[0] as number;

/**
 * The ingest loop: resume from svc's checkpoint, page the indexer in ingest-stamp order with
 * search_after, post each batch together with the position after it, and move on only once
 * svc answered 200 — so the checkpoint svc stores is always the position after alerts it has
 * stored (at-least-once; svc drops repeats by source id). Before each page one aggregation
 * compares the lateness window's bucket counts with what was read, and a bucket that grew is
 * narrowed to its new documents, which are delivered too (docs/adapter.md "Late alerts").
 * Nothing is dropped on failure: 429 waits out Retry-After, 5xx and connection errors back off
 * exponentially (with jitter, ≤ 30 s) and try the same batch again. Only an alert svc refuses
 * as malformed on its own is passed over, loudly.
 */
export function createIngestLoop(deps: IngestDeps) {
  const { client, tokens, indexer, logger, signal, metrics } = deps;
  const status: IngestStatus = {
    ingest: 'starting',
    indexer: 'unknown',
    lag_seconds: null,
    alerts_delivered: 0,
    alerts_duplicate: 0,
    alerts_refused: 0,
    ingest_order: 'ingest_time',
    alerts_late_in_window: 0,
    alerts_late: 0,
    alerts_late_ingested: 0,
    checkpoint_loaded: false,
  };
  let stamped: SortValue[] = STAMPED_START;
  let unstamped: SortValue[] | undefined;
  let window: LateWindow = createLateWindow(deps.lateMs);
  let unstampedSeen = false;
  let checks = 0;
  let lastCheck = 0;

  async function wait(attempt: number, reason: string, error?: unknown): Promise<boolean> {
    status.ingest = 'backing_off';
    const ms = backoffMs(attempt);
    logger.warn(
      { attempt, wait_ms: ms, err: error === undefined ? undefined : describe(error) },
      reason,
    );
    return pause(ms, signal);
  }

  /** svc's stored position; false only when stopped before svc answered. */
  async function loadCheckpoint(): Promise<boolean> {
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
          resume(stored);
          logger.info(
            { checkpoint: stored, alerts_total: res.body.alerts_total },
            stored
              ? 'resuming after the stored checkpoint'
              : 'no checkpoint yet: reading from the oldest alert',
          );
          return true;
        }
        if (!(await wait(attempt, `svc answered ${res.status} to the checkpoint read`)))
          return false;
      } catch (error) {
        if (!(await wait(attempt, 'cannot read the checkpoint from svc', error))) return false;
      }
    }
    return false;
  }

  function resume(stored: Checkpoint | null): void {
    if (stored?.order === 'ingest_time') {
      stamped = stored.search_after;
      unstamped = stored.unstamped_after;
      status.alerts_late = stored.alerts_late ?? 0;
      window = createLateWindow(deps.lateMs, {
        resumed: true,
        window: stored.window,
        settled: stored.settled,
      });
      if ((stamped[0] as number) > 0) window.advance(stamped[0] as number);
    } else {
      // Stored before the ingest stamp (or nothing yet): its position is on alert time, so it
      // goes on for unstamped documents; stamped ones are read from the first.
      unstamped = stored?.search_after;
    }
  }

  function checkpoint(stamps: number[], cursor: SortValue[], after?: SortValue[]): Checkpoint {
    // Before the first stamped document there is no window to keep.
    const at = cursor[0] as number;
    const state = at > 0 ? window.snapshotWith(stamps, at) : {};
    return {
      search_after: cursor,
      index: deps.index,
      order: 'ingest_time',
      ...(after ? { unstamped_after: after } : {}),
      ...state,
      alerts_late: status.alerts_late,
    };
  }

  async function search<T>(
    purpose: SearchPurpose,
    run: () => Promise<T>,
    size: (value: T) => number,
  ): Promise<T | undefined> {
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        const value = await run();
        metrics.search(purpose, size(value));
        if (status.indexer !== 'reachable') logger.info('indexer reachable');
        status.indexer = 'reachable';
        return value;
      } catch (error) {
        status.indexer = 'unreachable';
        if (!(error instanceof IndexerError)) throw error;
        if (!(await wait(attempt, 'indexer search failed', error))) return undefined;
      }
    }
    return undefined;
  }

  const page = (purpose: SearchPurpose, body: Record<string, unknown>) =>
    search(
      purpose,
      () => indexer.page(body),
      (hits) => hits.length,
    );
  const histogram = (purpose: SearchPurpose, body: Record<string, unknown>) =>
    search(
      purpose,
      () => indexer.histogram(body),
      () => 0,
    );
  const total = (body: Record<string, unknown>) =>
    search(
      'count',
      () => indexer.total(body),
      () => 0,
    );

  /**
   * Posts `batch` with the checkpoint `position(part)` returns for each part actually posted;
   * svc's answer counts go to `stored` too. True once svc stored it (or refused one malformed
   * alert); false when stopped.
   */
  async function deliver(
    batch: IndexedAlert[],
    position: (part: IndexedAlert[]) => Checkpoint,
    stored?: (accepted: number) => void,
  ): Promise<boolean> {
    const last = batch[batch.length - 1] as IndexedAlert;
    const body = {
      // Sent exactly as the indexer holds them: svc validates each alert (and refuses it alone).
      alerts: batch.map((a) => a.source) as Static<typeof WazuhAlert>[],
      checkpoint: position(batch),
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
        metrics.alerts('accepted', res.body.accepted);
        metrics.alerts('duplicate', res.body.duplicates);
        stored?.(res.body.accepted);
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
        return (
          (await deliver(batch.slice(0, half), position, stored)) &&
          deliver(batch.slice(half), position, stored)
        );
      }
      if (refusesTheAlert(res.status, res.body)) {
        status.alerts_refused += 1;
        metrics.alerts('refused', 1);
        logger.error(
          { source_id: last.source.id, index: last.index, problem: res.body },
          'svc refused this alert as malformed; passing over it',
        );
        return true;
      }
      if (!(await wait(attempt, `svc answered ${res.status} to an alert batch`))) return false;
    }
  }

  /** Delivers a page read by the stamped cursor; the window records each part svc stored. */
  async function deliverStamped(hits: IndexedAlert[]): Promise<boolean> {
    for (const batch of bySize(hits)) {
      const cursorOf = (part: IndexedAlert[]) => (part[part.length - 1] as IndexedAlert).sort;
      const ok = await deliver(
        batch,
        (part) => checkpoint(part.map(stampOf), cursorOf(part), unstamped),
        () => undefined,
      );
      if (!ok) return false;
      // Stored (a part svc refused as malformed counts as read: the indexer holds it).
      for (const alert of batch) window.record(stampOf(alert));
      stamped = cursorOf(batch);
      window.advance(stamped[0] as number);
      status.lag_seconds = Math.max(0, (Date.now() - (stamped[0] as number)) / 1000);
      if (signal.aborted) return false;
    }
    return true;
  }

  /** Delivers documents found behind the cursor; the position stays where it is. */
  async function deliverFound(hits: IndexedAlert[], when: 'window' | 'past_window') {
    let accepted = 0;
    for (const batch of bySize(hits)) {
      const ok = await deliver(
        batch,
        () => checkpoint([], stamped, unstamped),
        (n) => {
          accepted += n;
        },
      );
      if (!ok) return undefined;
    }
    metrics.recovered(when, accepted);
    return accepted;
  }

  /** Every stamped document of a search, page by page, at or behind the cursor. */
  async function readAll(
    purpose: SearchPurpose,
    body: (after: SortValue[] | undefined) => Record<string, unknown>,
  ): Promise<IndexedAlert[] | undefined> {
    const all: IndexedAlert[] = [];
    let after: SortValue[] | undefined;
    for (;;) {
      const hits = await page(purpose, body(after));
      if (!hits) return undefined;
      all.push(...hits.filter((h) => compareSort(h.sort, stamped) <= 0));
      if (hits.length < REREAD_PAGE) return all;
      after = hits[hits.length - 1]?.sort;
    }
  }

  /**
   * The window check: one aggregation of bucket counts over `[cursor − window, cursor]`; a bucket
   * holding more than was read is narrowed (a per-millisecond histogram of it, then the
   * documents at the milliseconds that grew) or, when only its count is known, re-read whole.
   * False when stopped.
   */
  async function check(): Promise<boolean> {
    if (!(await checkWindow())) return false;
    return checks++ % COUNT_EVERY === 0 ? checkCounts() : true;
  }

  async function checkWindow(): Promise<boolean> {
    const cursor = stamped[0] as number;
    const horizon = window.horizon;
    if (cursor <= 0 || horizon === undefined) return true;
    const counts = await histogram('window', bucketCounts(horizon, stamped, window.bucketMs));
    if (!counts) return false;
    for (const diff of window.differences(counts, cursor)) {
      let found: IndexedAlert[] | undefined;
      let at: number[] | undefined;
      if (diff.narrow) {
        const upTo = diff.end >= cursor ? stamped : diff.end + 1;
        const perMs = await histogram('narrow', bucketCounts(diff.start, upTo, 1));
        if (!perMs) return false;
        at = window.grownStamps(diff.start, perMs);
        if (at.length === 0) continue;
        const stamps = at;
        found = await readAll('reread', (after) => stampedAt(stamps, after, REREAD_PAGE));
      } else {
        found = await readAll('reread', (after) =>
          stampedBetween(diff.start, diff.end, after, REREAD_PAGE),
        );
      }
      if (!found) return false;
      if (found.length > 0) {
        const accepted = await deliverFound(found, 'window');
        if (accepted === undefined) return false;
        status.alerts_late_in_window += accepted;
        if (accepted > 0)
          logger.info(
            { accepted, reread: found.length, bucket: new Date(diff.start).toISOString() },
            'late alerts found within the lateness window; delivered',
          );
      }
      window.reread(diff.start, found.map(stampOf), at);
    }
    return true;
  }

  /**
   * Documents below the window's start that were not there when it passed them became
   * searchable later than the window: counted, logged, and looked for in the settled history.
   */
  async function checkCounts(): Promise<boolean> {
    const horizon = window.horizon;
    if (horizon !== undefined) {
      const below = await total(stampedBelow(horizon));
      if (below === undefined) return false;
      const late = window.lateBelow(below);
      if (late > 0 && !(await pastWindow(late))) return false;
    }
    const missing = await total(unstampedCount());
    if (missing === undefined) return false;
    if (missing > 0 && !unstampedSeen) {
      logger.warn(
        { documents: missing, index: deps.index },
        'documents without svc_ingested_at: the ingest pipeline is not applied to every alert index; reading them in alert-time order, where an alert indexed late can be missed',
      );
    }
    unstampedSeen = missing > 0;
    status.ingest_order = unstampedSeen ? 'alert_time' : 'ingest_time';
    return true;
  }

  async function pastWindow(late: number): Promise<boolean> {
    status.alerts_late += late;
    metrics.late(late);
    let ingested = 0;
    const range = window.historyRange();
    if (range) {
      const counts = await histogram(
        'window',
        bucketCounts(range.from, range.to + 1, window.bucketMs),
      );
      if (!counts) return false;
      for (const diff of window.historyDifferences(counts)) {
        const found = await readAll('reread', (after) =>
          stampedBetween(diff.start, diff.end, after, REREAD_PAGE),
        );
        if (!found) return false;
        const accepted = await deliverFound(found, 'past_window');
        if (accepted === undefined) return false;
        ingested += accepted;
        window.settle(diff.start, found.length);
      }
    }
    status.alerts_late_ingested += ingested;
    logger.warn(
      { late, ingested, window_seconds: deps.lateMs / 1000 },
      'alerts became searchable later than the lateness window',
    );
    return true;
  }

  async function readUnstamped(): Promise<IndexedAlert[] | undefined> {
    const hits = await page('unstamped', unstampedPage(unstamped, deps.batchSize));
    if (!hits) return undefined;
    for (const batch of bySize(hits)) {
      const cursor = (part: IndexedAlert[]) => (part[part.length - 1] as IndexedAlert).sort;
      if (!(await deliver(batch, (part) => checkpoint([], stamped, cursor(part)))))
        return undefined;
      unstamped = cursor(batch);
    }
    return hits;
  }

  return {
    status,
    async run(): Promise<void> {
      if (!(await loadCheckpoint())) {
        status.ingest = 'stopped';
        return;
      }
      let caughtUp = false;
      while (!signal.aborted) {
        if (!caughtUp || Date.now() - lastCheck >= CHECK_EVERY_MS) {
          lastCheck = Date.now();
          if (!(await check())) break;
        }
        const hits = await page('page', stampedPage(stamped, deps.batchSize));
        if (!hits || !(await deliverStamped(hits))) break;
        let full = hits.length === deps.batchSize;
        if (unstampedSeen) {
          const old = await readUnstamped();
          if (!old) break;
          full ||= old.length === deps.batchSize;
        }
        caughtUp = !full;
        if (caughtUp) {
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
