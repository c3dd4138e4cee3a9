import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the subset of OpenSearch's `_search` API that the adapter uses on the
 * Wazuh indexer (DESIGN "tests run local servers speaking that protocol"): the index pattern in
 * the path (comma-separated, `*` wildcards; a pattern matching nothing answers no hits, as with
 * OpenSearch's default allow_no_indices), `size`, `sort` on date fields (`timestamp`,
 * `svc_ingested_at`: epoch-millis sort values) and keyword fields, `search_after`, `query`
 * `match_all`, `range`, `term`, `terms`, `exists` and `bool` (`filter`, `must`, `must_not`),
 * `_source.excludes`, `track_total_hits`, a `date_histogram` aggregation with a `fixed_interval`
 * in ms, and HTTP basic auth. Like the tenant chart's ingest pipeline, it stamps every appended
 * document with `svc_ingested_at` (unless started with `stamp: false`). Errors come in
 * OpenSearch's error JSON shape. With `tls` it serves HTTPS with that certificate and key, as
 * the real indexer does. The real engine (testcluster/opensearch/) replaced it wherever a test
 * needs no fault the engine cannot produce on demand.
 */

interface Doc {
  index: string;
  id: string;
  source: Record<string, unknown>;
}

type SortValue = number | string;
type SortKey = { field: string; descending: boolean };

export interface SearchRequest {
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

export interface IndexerStandIn {
  url: string;
  /** Adds alerts to the daily index of their timestamp (`wazuh-alerts-4.x-YYYY.MM.DD`). */
  append(...alerts: Record<string, unknown>[]): void;
  /** Every `_search` request received, in order. */
  requests: SearchRequest[];
  /** The next `count` searches answer `status` with an OpenSearch error. */
  failNext(count: number, status?: number): void;
  count(): number;
  close(): Promise<void>;
}

class SearchError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    reason: string,
  ) {
    super(reason);
  }
}

function errorBody(status: number, type: string, reason: string) {
  return {
    error: { root_cause: [{ type, reason }], type, reason },
    status,
  };
}

function globToRegExp(pattern: string): RegExp {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`);
}

function field(source: Record<string, unknown>, path: string): unknown {
  let value: unknown = source;
  for (const part of path.split('.'))
    value = (value as Record<string, unknown> | undefined)?.[part];
  return value;
}

const DATE_FIELDS = new Set(['timestamp', '@timestamp', 'svc_ingested_at']);

/** Dates sort by epoch millis (what OpenSearch returns as the sort value of a date field). */
function sortValue(doc: Doc, key: string): SortValue {
  const value = field(doc.source, key);
  if (DATE_FIELDS.has(key)) return Date.parse(String(value));
  if (key === '_id') return doc.id;
  if (typeof value === 'number' || typeof value === 'string') return value;
  throw new SearchError(
    400,
    'illegal_argument_exception',
    `No mapping found for [${key}] in order to sort on`,
  );
}

function parseSort(sort: unknown): SortKey[] {
  if (sort === undefined) return [{ field: '_id', descending: false }];
  if (!Array.isArray(sort))
    throw new SearchError(400, 'parsing_exception', '[sort] must be an array');
  return sort.map((entry: unknown) => {
    if (typeof entry === 'string') return { field: entry, descending: false };
    const [name, spec] = Object.entries(entry as Record<string, unknown>)[0] ?? [];
    if (!name) throw new SearchError(400, 'parsing_exception', 'malformed sort');
    const order = typeof spec === 'string' ? spec : (spec as { order?: string } | undefined)?.order;
    return { field: name, descending: order === 'desc' };
  });
}

function compare(a: SortValue[], b: SortValue[], keys: SortKey[]): number {
  for (let i = 0; i < keys.length; i++) {
    const x = a[i] as SortValue;
    const y = b[i] as SortValue;
    const c = x < y ? -1 : x > y ? 1 : 0;
    if (c !== 0) return keys[i]?.descending ? -c : c;
  }
  return 0;
}

function asMillis(value: unknown, format: unknown): number {
  if (format === 'epoch_millis' || typeof value === 'number') return Number(value);
  return Date.parse(String(value));
}

function fieldValue(doc: Doc, name: string): number | string | undefined {
  const value = field(doc.source, name);
  if (value === undefined || value === null) return undefined;
  if (DATE_FIELDS.has(name)) return Date.parse(String(value));
  return typeof value === 'number' ? value : String(value);
}

function bound(name: string, value: unknown, format: unknown): number | string {
  if (!DATE_FIELDS.has(name)) return typeof value === 'number' ? value : String(value);
  return asMillis(value, format);
}

/** match_all, range, terms, exists and bool (filter, must, must_not). */
function matcher(query: unknown): (doc: Doc) => boolean {
  if (query === undefined) return () => true;
  const q = query as Record<string, unknown>;
  if ('match_all' in q) return () => true;
  if ('range' in q) {
    const [name, spec] =
      Object.entries(q.range as Record<string, Record<string, unknown>>)[0] ?? [];
    if (!name || !spec) throw new SearchError(400, 'parsing_exception', 'malformed range');
    return (doc) => {
      const v = fieldValue(doc, name);
      if (v === undefined) return false;
      const b = (k: string) => bound(name, spec[k], spec.format);
      return (
        (spec.gt === undefined || v > b('gt')) &&
        (spec.gte === undefined || v >= b('gte')) &&
        (spec.lt === undefined || v < b('lt')) &&
        (spec.lte === undefined || v <= b('lte'))
      );
    };
  }
  if ('terms' in q) {
    const [name, values] = Object.entries(q.terms as Record<string, unknown[]>)[0] ?? [];
    if (!name || !Array.isArray(values))
      throw new SearchError(400, 'parsing_exception', 'malformed terms');
    const wanted = new Set(values.map((v) => bound(name, v, 'epoch_millis')));
    return (doc) => {
      const v = fieldValue(doc, name);
      return v !== undefined && wanted.has(v);
    };
  }
  if ('term' in q) {
    const [name, spec] = Object.entries(q.term as Record<string, unknown>)[0] ?? [];
    if (!name) throw new SearchError(400, 'parsing_exception', 'malformed term');
    const value =
      typeof spec === 'object' && spec !== null ? (spec as { value?: unknown }).value : spec;
    const wanted = bound(name, value, 'epoch_millis');
    return (doc) => fieldValue(doc, name) === wanted;
  }
  if ('exists' in q) {
    const name = (q.exists as { field?: string }).field ?? '';
    return (doc) => fieldValue(doc, name) !== undefined;
  }
  if ('bool' in q) {
    const b = q.bool as Record<string, unknown>;
    const list = (key: string) => {
      const v = b[key];
      return (v === undefined ? [] : Array.isArray(v) ? v : [v]).map(matcher);
    };
    const all = [...list('filter'), ...list('must')];
    const none = list('must_not');
    return (doc) => all.every((m) => m(doc)) && !none.some((m) => m(doc));
  }
  throw new SearchError(400, 'parsing_exception', `unknown query [${Object.keys(q)[0]}]`);
}

/** The `date_histogram` aggregations of a search body over the matched documents. */
function aggregate(aggs: unknown, docs: Doc[]): Record<string, unknown> | undefined {
  if (aggs === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(aggs as Record<string, Record<string, unknown>>)) {
    const histogram = spec.date_histogram as
      | { field?: string; fixed_interval?: string; min_doc_count?: number }
      | undefined;
    const interval = /^(\d+)ms$/.exec(histogram?.fixed_interval ?? '');
    if (!histogram?.field || !interval)
      throw new SearchError(400, 'parsing_exception', `unsupported aggregation [${name}]`);
    const width = Number(interval[1]);
    const counts = new Map<number, number>();
    for (const doc of docs) {
      const v = fieldValue(doc, histogram.field);
      if (typeof v !== 'number') continue;
      const key = Math.floor(v / width) * width;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    out[name] = {
      buckets: [...counts]
        .sort((a, b) => a[0] - b[0])
        .map(([key, doc_count]) => ({
          key,
          key_as_string: new Date(key).toISOString(),
          doc_count,
        })),
    };
  }
  return out;
}

function withoutFields(source: Record<string, unknown>, spec: unknown): Record<string, unknown> {
  const excludes = (spec as { excludes?: unknown } | undefined)?.excludes;
  if (!Array.isArray(excludes)) return source;
  const copy = { ...source };
  for (const name of excludes) delete copy[String(name)];
  return copy;
}

function dailyIndex(source: Record<string, unknown>): string {
  const day = new Date(Date.parse(String(source.timestamp))).toISOString().slice(0, 10);
  return `wazuh-alerts-4.x-${day.replaceAll('-', '.')}`;
}

export async function startIndexerStandIn(
  options: {
    username?: string;
    password?: string;
    tls?: { cert: string; key: string };
    /** false: documents get no ingest stamp, as on an indexer without the chart's pipeline. */
    stamp?: boolean;
  } = {},
): Promise<IndexerStandIn> {
  const docs: Doc[] = [];
  const requests: SearchRequest[] = [];
  let failures: { count: number; status: number } = { count: 0, status: 503 };
  const expected =
    options.username === undefined
      ? undefined
      : `Basic ${Buffer.from(`${options.username}:${options.password ?? ''}`).toString('base64')}`;

  function search(pattern: string, body: Record<string, unknown>) {
    const started = Date.now();
    const patterns = pattern.split(',').map(globToRegExp);
    const exact = pattern.split(',').filter((p) => !p.includes('*'));
    for (const name of exact) {
      if (!docs.some((d) => d.index === name)) {
        throw new SearchError(404, 'index_not_found_exception', `no such index [${name}]`);
      }
    }
    const size = body.size === undefined ? 10 : Number(body.size);
    if (!Number.isInteger(size) || size < 0 || size > 10_000) {
      throw new SearchError(
        400,
        'illegal_argument_exception',
        `invalid size [${String(body.size)}]`,
      );
    }
    const keys = parseSort(body.sort);
    const after = body.search_after as SortValue[] | undefined;
    if (after !== undefined && (!Array.isArray(after) || after.length !== keys.length)) {
      throw new SearchError(
        400,
        'illegal_argument_exception',
        `search_after has ${Array.isArray(after) ? after.length : 0} value(s) but sort has ${keys.length}.`,
      );
    }
    const matches = matcher(body.query);
    const matched = docs.filter((d) => patterns.some((p) => p.test(d.index)) && matches(d));
    const hits = (size === 0 ? [] : matched)
      .map((d) => ({ doc: d, sort: keys.map((k) => sortValue(d, k.field)) }))
      .filter((h) => after === undefined || compare(h.sort, after, keys) > 0)
      .sort((a, b) => compare(a.sort, b.sort, keys));
    const aggregations = aggregate(body.aggs, matched);
    return {
      took: Date.now() - started,
      timed_out: false,
      _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
      hits: {
        total: { value: matched.length, relation: 'eq' },
        max_score: null,
        hits: hits.slice(0, size).map((h) => ({
          _index: h.doc.index,
          _id: h.doc.id,
          _score: null,
          _source: withoutFields(h.doc.source, body._source),
          sort: h.sort,
        })),
      },
      ...(aggregations ? { aggregations } : {}),
    };
  }

  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
        res.end(JSON.stringify(body));
      };
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const match = /^\/([^/]+)\/_search$/.exec(path);
      if (expected !== undefined && req.headers.authorization !== expected) {
        return send(
          401,
          errorBody(
            401,
            'security_exception',
            'missing authentication credentials for REST request [/_search]',
          ),
        );
      }
      if (!match || (req.method !== 'POST' && req.method !== 'GET')) {
        return send(
          405,
          errorBody(405, 'illegal_argument_exception', `Incorrect HTTP method for uri [${path}]`),
        );
      }
      let body: Record<string, unknown>;
      try {
        const text = Buffer.concat(chunks).toString('utf8');
        body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      } catch {
        return send(400, errorBody(400, 'parse_exception', 'request body is required'));
      }
      requests.push({ path, authorization: req.headers.authorization, body });
      if (failures.count > 0) {
        failures.count -= 1;
        return send(
          failures.status,
          errorBody(
            failures.status,
            'cluster_block_exception',
            'blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];',
          ),
        );
      }
      try {
        send(200, search(decodeURIComponent(match[1] ?? ''), body));
      } catch (error) {
        if (!(error instanceof SearchError)) throw error;
        send(error.status, errorBody(error.status, error.type, error.message));
      }
    });
  };
  const server = options.tls
    ? https.createServer(options.tls, handler)
    : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    requests,
    append(...alerts) {
      // One stamp per append, like one bulk through the ingest pipeline.
      const stamp = new Date().toISOString();
      for (const alert of alerts) {
        const source = options.stamp === false ? alert : { ...alert, svc_ingested_at: stamp };
        docs.push({ index: dailyIndex(alert), id: randomBytes(15).toString('base64url'), source });
      }
    },
    failNext(count, status = 503) {
      failures = { count, status };
    },
    count: () => docs.length,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
