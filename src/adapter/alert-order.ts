import type { SortValue } from './indexer.ts';

/**
 * The searches the adapter sends to the tenant's indexer (docs/adapter.md "Late alerts").
 *
 * Alerts are read in INGEST order: the tenant chart's ingest pipeline (`svc-ingest-time`,
 * applied as `index.final_pipeline` to `wazuh-alerts-*`) stamps every document with the time
 * the indexer received it. A backlog an hour old, a buffering agent or a skewed manager clock
 * then no longer puts an alert behind the cursor: its stamp is new. Documents without a stamp
 * (an index the pipeline was not applied to) are read in alert-time order by a second cursor.
 */

/** The field the pipeline writes; no Wazuh or Filebeat field starts with `svc_`. */
export const INGESTED_AT = 'svc_ingested_at';

/** The position before every stamped document. */
export const STAMPED_START: SortValue[] = [0, ''];

// `unmapped_type`: an index the pipeline never stamped has no mapping for the field, and a sort
// on it would fail the whole search instead of matching nothing there.
const INGEST_SORT = [
  { [INGESTED_AT]: { order: 'asc', unmapped_type: 'date' } },
  { id: { order: 'asc' } },
];
const ALERT_TIME_SORT = [{ timestamp: { order: 'asc' } }, { id: { order: 'asc' } }];
/** svc stores the document as Wazuh wrote it: the stamp travels as the hit's sort value only. */
const SOURCE = { excludes: [INGESTED_AT] };

type Body = Record<string, unknown>;

/** `[from, to]` on the stamp, in epoch millis (either end open when undefined). */
function stampRange(from: number | undefined, to?: number, below?: number): Body {
  return {
    range: {
      [INGESTED_AT]: {
        ...(from === undefined ? {} : { gte: from }),
        ...(to === undefined ? {} : { lte: to }),
        ...(below === undefined ? {} : { lt: below }),
        format: 'epoch_millis',
      },
    },
  };
}

/**
 * The next `size` stamped documents after `after`. The range lets OpenSearch skip shards and
 * indices whose stamps all lie behind the cursor before search_after filters inside the rest.
 */
export function stampedPage(after: SortValue[], size: number): Body {
  const from = typeof after[0] === 'number' ? after[0] : 0;
  return {
    size,
    sort: INGEST_SORT,
    track_total_hits: false,
    _source: SOURCE,
    query: stampRange(from),
    search_after: after,
  };
}

/** The next `size` documents WITHOUT a stamp after `after`, in alert-time order. */
export function unstampedPage(after: SortValue[] | undefined, size: number): Body {
  const from = after?.[0];
  return {
    size,
    sort: ALERT_TIME_SORT,
    track_total_hits: false,
    query: {
      bool: {
        must_not: [{ exists: { field: INGESTED_AT } }],
        filter:
          typeof from === 'number'
            ? [{ range: { timestamp: { gte: from, format: 'epoch_millis' } } }]
            : [],
      },
    },
    ...(after ? { search_after: after } : {}),
  };
}

/**
 * Stamped documents from `from` up to and including the cursor `upTo` — the documents the
 * cursor has passed: those of the cursor's own millisecond with a later `id` are next, not late.
 * A number `upTo` is an exclusive bound instead.
 */
function behind(from: number, upTo: SortValue[] | number): Body {
  if (typeof upTo === 'number') return stampRange(from, undefined, upTo);
  const [stamp, id] = upTo;
  return {
    bool: {
      filter: [stampRange(from, stamp as number)],
      must_not: [
        {
          bool: {
            filter: [{ term: { [INGESTED_AT]: stamp } }, { range: { id: { gt: id } } }],
          },
        },
      ],
    },
  };
}

/**
 * How many stamped documents each `bucketMs` bucket from `from` to `upTo` holds (see `behind`):
 * one aggregation, no documents (buckets aligned to the epoch, keyed by their first ms).
 */
export function bucketCounts(from: number, upTo: SortValue[] | number, bucketMs: number): Body {
  return {
    size: 0,
    track_total_hits: false,
    query: behind(from, upTo),
    aggs: {
      buckets: {
        date_histogram: { field: INGESTED_AT, fixed_interval: `${bucketMs}ms`, min_doc_count: 1 },
      },
    },
  };
}

/** Stamped documents at exactly the millisecond stamps `stamps`, in ingest order. */
export function stampedAt(stamps: number[], after: SortValue[] | undefined, size: number): Body {
  return {
    size,
    sort: INGEST_SORT,
    track_total_hits: false,
    _source: SOURCE,
    query: { terms: { [INGESTED_AT]: stamps } },
    ...(after ? { search_after: after } : {}),
  };
}

/** Stamped documents of `[from, to]`, in ingest order (a whole bucket re-read). */
export function stampedBetween(
  from: number,
  to: number,
  after: SortValue[] | undefined,
  size: number,
): Body {
  return {
    size,
    sort: INGEST_SORT,
    track_total_hits: false,
    _source: SOURCE,
    query: stampRange(from, to),
    ...(after ? { search_after: after } : {}),
  };
}

/** Counts stamped documents below `below` (the window's start): an exact total, no documents. */
export function stampedBelow(below: number): Body {
  return { size: 0, track_total_hits: true, query: stampRange(undefined, undefined, below) };
}

/** Counts documents without a stamp. */
export function unstampedCount(): Body {
  return {
    size: 0,
    track_total_hits: true,
    query: { bool: { must_not: [{ exists: { field: INGESTED_AT } }] } },
  };
}

/** a < b (-1), a = b (0) or a > b (1) in the sort order `[number, keyword]`. */
export function compareSort(a: SortValue[], b: SortValue[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (typeof x === 'number' && typeof y === 'number') return x < y ? -1 : 1;
    // Keywords sort by their UTF-8 bytes in OpenSearch; Buffer.compare does the same.
    return Buffer.compare(Buffer.from(String(x)), Buffer.from(String(y))) < 0 ? -1 : 1;
  }
  return 0;
}
