/**
 * What the adapter knows about the documents it has read behind its cursor, so that a document
 * that becomes searchable late (after documents stamped later were read: shards refresh on their
 * own, a bulk is still in flight) is found with one aggregation per poll instead of a re-read
 * (docs/adapter.md "Late alerts").
 *
 * The lateness window is `[cursor − lateMs, cursor]` on the ingest stamp, cut into
 * WINDOW_BUCKETS buckets aligned to the epoch. For each bucket the window holds how many
 * documents were read and their stamps (8 bytes a document), so a bucket whose indexer count
 * grew is narrowed to the milliseconds that grew. Buckets that leave the window add their
 * count to `settled` (documents below the window's start) and stay as counts in a bounded
 * history, where a document later than the window can still be located.
 */

/** Buckets per window: 10 s buckets for the default 15 min. */
export const WINDOW_BUCKETS = 90;
/** Settled buckets kept as counts (96 windows: 24 h for the default). */
export const HISTORY_BUCKETS = 96 * WINDOW_BUCKETS;

/** What the checkpoint carries of the window: counts only (stamps are rebuilt on demand). */
export interface WindowSnapshot {
  bucket_ms: number;
  /** The first bucket's start (epoch ms); `counts[i]` is bucket `start + i × bucket_ms`. */
  start: number;
  /** Documents read per bucket; −1: not known (re-read that bucket whole if it has any). */
  counts: number[];
}

interface Bucket {
  /** Documents read; −1 when not known. */
  count: number;
  /** Their stamps (unordered), or null when only the count is known (after a restart). */
  stamps: number[] | null;
}

/** A window bucket whose indexer count differs from what was read. */
export interface BucketDifference {
  start: number;
  end: number;
  /** `stamps`: the bucket's stamps are known, compare per millisecond; `whole`: re-read it. */
  narrow: boolean;
}

export function bucketMsFor(lateMs: number): number {
  return Math.max(1, Math.ceil(lateMs / WINDOW_BUCKETS));
}

export function createLateWindow(
  lateMs: number,
  restored: {
    resumed: boolean;
    window?: WindowSnapshot | undefined;
    settled?: number | undefined;
  } = {
    resumed: false,
  },
) {
  const bucketMs = bucketMsFor(lateMs);
  const buckets = new Map<number, Bucket>();
  /** Settled buckets that held documents; a bucket of `[historyFrom, horizon)` not here held none. */
  const history = new Map<number, number>();
  /**
   * A first start reads from the oldest document, so it knows every bucket behind it (bounded
   * to HISTORY_BUCKETS once the window moves); a resumed one knows from its window's start.
   */
  let historyFrom: number | undefined = restored.resumed ? undefined : Number.NEGATIVE_INFINITY;
  /** Start of the oldest bucket in the window; undefined before the first cursor. */
  let horizon: number | undefined;
  /**
   * Stamped documents known below the horizon: 0 on a first start (reading from the oldest
   * document, the adapter knows all of them), undefined when resumed without it until counted.
   */
  let settled: number | undefined = restored.resumed ? undefined : 0;
  /** Resumed without a usable snapshot: what was read in the window before is unknown. */
  let unknownUntilFirstAdvance = restored.resumed;

  const bucketOf = (stamp: number) => Math.floor(stamp / bucketMs) * bucketMs;

  if (restored.window && restored.window.bucket_ms === bucketMs) {
    const { start, counts } = restored.window;
    counts.forEach((count, i) => {
      buckets.set(start + i * bucketMs, { count, stamps: count === 0 ? [] : null });
    });
    horizon = start;
    historyFrom = start;
    settled = restored.settled;
    unknownUntilFirstAdvance = false;
  }

  function bucket(start: number): Bucket {
    let b = buckets.get(start);
    if (!b) {
      b = { count: 0, stamps: [] };
      buckets.set(start, b);
    }
    return b;
  }

  return {
    bucketMs,
    get horizon(): number | undefined {
      return horizon;
    },
    get settled(): number | undefined {
      return settled;
    },

    /** Moves the window's start to `cursor − lateMs`; buckets left behind settle. */
    advance(cursorStamp: number): void {
      const next = bucketOf(cursorStamp - lateMs);
      if (unknownUntilFirstAdvance) {
        // Restarted without a snapshot: everything already in the window may have been
        // read, or not. Each such bucket is re-read whole once (svc drops repeats by id).
        for (let s = next; s <= bucketOf(cursorStamp); s += bucketMs) {
          if (!buckets.has(s)) buckets.set(s, { count: -1, stamps: null });
        }
        unknownUntilFirstAdvance = false;
      }
      if (horizon !== undefined && next <= horizon) return;
      historyFrom ??= next;
      horizon = next;
      for (const [start, b] of [...buckets].sort((x, y) => x[0] - y[0])) {
        if (start >= next) break;
        buckets.delete(start);
        if (b.count < 0) {
          settled = undefined;
          continue;
        }
        if (settled !== undefined) settled += b.count;
        history.set(start, b.count);
      }
      historyFrom = Math.max(historyFrom, next - HISTORY_BUCKETS * bucketMs);
      for (const start of history.keys()) if (start < historyFrom) history.delete(start);
    },

    /** One document the cursor delivered (its stamp is ahead of the horizon). */
    record(stamp: number): void {
      const b = bucket(bucketOf(stamp));
      if (b.count >= 0) b.count += 1;
      b.stamps?.push(stamp);
    },

    /**
     * The window buckets up to `cursorStamp` whose indexer count (`indexer`: bucket start →
     * documents) is not what was read. A bucket that shrank (retention deleted an index) is
     * taken as the indexer has it and left out.
     */
    differences(indexer: Map<number, number>, cursorStamp: number): BucketDifference[] {
      if (horizon === undefined) return [];
      const out: BucketDifference[] = [];
      for (let start = horizon; start <= bucketOf(cursorStamp); start += bucketMs) {
        const b = bucket(start);
        const now = indexer.get(start) ?? 0;
        const end = Math.min(start + bucketMs - 1, cursorStamp);
        if (b.count < 0) {
          if (now > 0) out.push({ start, end, narrow: false });
          else buckets.set(start, { count: 0, stamps: [] });
        } else if (now > b.count) {
          out.push({ start, end, narrow: b.stamps !== null });
        } else if (now < b.count) {
          buckets.set(start, { count: now, stamps: null });
        }
      }
      return out;
    },

    /** The milliseconds of a bucket where the indexer (`perMs`: stamp → documents) has more. */
    grownStamps(start: number, perMs: Map<number, number>): number[] {
      const read = new Map<number, number>();
      for (const s of bucket(start).stamps ?? []) read.set(s, (read.get(s) ?? 0) + 1);
      return [...perMs].filter(([ms, n]) => n > (read.get(ms) ?? 0)).map(([ms]) => ms);
    },

    /**
     * After a re-read: `stamps` are every document now read at the milliseconds `at` of the
     * bucket (or in the whole bucket when `at` is undefined).
     */
    reread(start: number, stamps: number[], at?: number[]): void {
      const b = bucket(start);
      if (at === undefined || b.stamps === null) {
        buckets.set(start, { count: stamps.length, stamps: at === undefined ? stamps : null });
        return;
      }
      const only = new Set(at);
      b.stamps = [...b.stamps.filter((s) => !only.has(s)), ...stamps];
      b.count = b.stamps.length;
    },

    /**
     * Compares the indexer's count below the horizon with `settled`: the growth is the number of
     * documents that became searchable later than the window (0 the first time, when it only
     * sets the baseline, and when documents were deleted).
     */
    lateBelow(indexerBelow: number): number {
      const grown = settled === undefined ? 0 : indexerBelow - settled;
      settled = indexerBelow;
      return Math.max(0, grown);
    },

    /** The history's range, for a histogram compared with `historyDifferences`. */
    historyRange(): { from: number; to: number } | undefined {
      if (historyFrom === undefined || horizon === undefined || historyFrom >= horizon)
        return undefined;
      return { from: historyFrom, to: horizon - 1 };
    },

    /** History buckets the indexer now holds more documents in. */
    historyDifferences(indexer: Map<number, number>): { start: number; end: number }[] {
      const from = historyFrom ?? Number.POSITIVE_INFINITY;
      return [...indexer]
        .filter(([start]) => start >= from && start < (horizon ?? 0))
        .filter(([start, n]) => n > (history.get(start) ?? 0))
        .map(([start]) => ({ start, end: start + bucketMs - 1 }));
    },

    /** A history bucket re-read: it now counts `count` documents. */
    settle(start: number, count: number): void {
      history.set(start, count);
    },

    /**
     * What the checkpoint stored with a batch must say: the window as it will be once `stamps`
     * (that batch) are recorded and the cursor is at `cursorStamp`, without changing it yet —
     * svc may refuse the batch, and a stored count must never exceed what svc has stored.
     */
    snapshotWith(
      stamps: number[],
      cursorStamp: number | undefined,
    ): { window?: WindowSnapshot; settled?: number } {
      const counts = new Map<number, number>();
      for (const [start, b] of buckets) counts.set(start, b.count);
      for (const stamp of stamps) {
        const start = bucketOf(stamp);
        const n = counts.get(start) ?? 0;
        counts.set(start, n < 0 ? n : n + 1);
      }
      let start = horizon;
      if (cursorStamp !== undefined) {
        const next = bucketOf(cursorStamp - lateMs);
        if (start === undefined || next > start) start = next;
      }
      if (start === undefined) return settled === undefined ? {} : { settled };
      let below = settled;
      const kept: number[] = [];
      for (const [s, n] of counts) {
        if (s >= start) kept.push(s);
        else if (below !== undefined) below = n < 0 ? undefined : below + n;
      }
      const last = kept.length === 0 ? start : Math.max(...kept);
      const window: number[] = [];
      for (let s = start; s <= last; s += bucketMs) window.push(counts.get(s) ?? 0);
      return {
        window: { bucket_ms: bucketMs, start, counts: window },
        ...(below === undefined ? {} : { settled: below }),
      };
    },
  };
}

export type LateWindow = ReturnType<typeof createLateWindow>;
