import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The benchmark's Wazuh indexer: one HTTP server holding every tenant's alerts, each tenant
 * under its own path prefix (`<url>/t/<n>` is tenant n's SVC_INDEXER_URL), answering the one
 * `_search` shape `svc adapter` sends (src/adapter/indexer.ts): sort on `timestamp` then `id`
 * ascending, `size`, `search_after`, and a `range` on `timestamp` implied by it.
 *
 * Why not test/support/indexer-stand-in.ts: that one filters and sorts every document on every
 * search (parsing each timestamp again), which is right for tests and would make this
 * benchmark measure the stand-in: 50 adapters polling 2,000+ documents each would cost the
 * bench process, which also runs svc, more CPU than svc itself. An indexer has an index: here
 * each tenant's hits are kept sorted, a search is a binary search, and each hit is serialized
 * once when appended. It shares the bench process's CPU all the same (see docs/benchmarks.md).
 */
type SortValues = [number, string];

interface Hit {
  sort: SortValues;
  /** The hit as it appears in `hits.hits`, serialized once. */
  json: string;
}

export interface BenchIndexer {
  /** The SVC_INDEXER_URL of tenant `n` (0-based). */
  urlFor(n: number): string;
  /** Adds alerts to tenant `n`; they are searchable when this returns. */
  append(n: number, alerts: readonly Record<string, unknown>[]): void;
  /** Serializes alerts for tenant `n` now and holds them back until publish(). */
  stage(n: number, alerts: readonly Record<string, unknown>[]): void;
  /** Makes every staged alert searchable at once. */
  publish(): void;
  /** Alerts held, all tenants. */
  count(): number;
  /** Characters of serialized hits held (the indexer's share of the bench process's memory). */
  bytes(): number;
  /** Searches answered so far. */
  searches(): number;
  close(): Promise<void>;
}

function compare(a: SortValues, b: readonly unknown[]): number {
  const [ta, ia] = a;
  const tb = Number(b[0]);
  if (ta !== tb) return ta < tb ? -1 : 1;
  const ib = String(b[1] ?? '');
  return ia < ib ? -1 : ia > ib ? 1 : 0;
}

/** Index of the first hit sorting after `after` (binary search). */
function firstAfter(hits: Hit[], after: readonly unknown[] | undefined): number {
  if (!after) return 0;
  let lo = 0;
  let hi = hits.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare((hits[mid] as Hit).sort, after) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function dailyIndex(ms: number): string {
  return `wazuh-alerts-4.x-${new Date(ms).toISOString().slice(0, 10).replaceAll('-', '.')}`;
}

export async function startBenchIndexer(tenants: number): Promise<BenchIndexer> {
  const data: Hit[][] = Array.from({ length: tenants }, () => []);
  let held = 0;
  let chars = 0;
  let answered = 0;
  let docId = 0;

  function search(n: number, body: Record<string, unknown>): string {
    const hits = data[n] ?? [];
    const size = Number(body.size ?? 10);
    const after = body.search_after as unknown[] | undefined;
    const from = firstAfter(hits, after);
    const page = hits.slice(from, from + size).map((h) => h.json);
    answered += 1;
    return `{"took":0,"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},"hits":{"total":{"value":${hits.length - from},"relation":"eq"},"max_score":null,"hits":[${page.join(',')}]}}`;
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const match = /^\/t\/(\d+)\/[^/]+\/_search$/.exec((req.url ?? '').split('?')[0] ?? '');
      const n = Number(match?.[1]);
      if (!match || !(n < tenants)) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(
          '{"error":{"type":"index_not_found_exception","reason":"no such index"},"status":404}',
        );
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      const out = search(n, text ? (JSON.parse(text) as Record<string, unknown>) : {});
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(out);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  const staged: { n: number; hit: Hit }[] = [];

  function toHit(source: Record<string, unknown>): Hit {
    const ms = Date.parse(String(source.timestamp));
    const sort: SortValues = [ms, String(source.id)];
    docId += 1;
    const hit = { _index: dailyIndex(ms), _id: `bench-${docId}`, _score: null, _source: source };
    return { sort, json: JSON.stringify({ ...hit, sort }) };
  }

  function insert(n: number, hit: Hit): void {
    const hits = data[n];
    if (!hits) throw new Error(`no tenant ${n} in the bench indexer`);
    // Appends come in time order, so this is nearly always a push.
    const at = firstAfter(hits, hit.sort);
    if (at === hits.length) hits.push(hit);
    else hits.splice(at, 0, hit);
    held += 1;
    chars += hit.json.length;
  }

  return {
    urlFor: (n) => `${url}/t/${n}`,
    append(n, alerts) {
      for (const source of alerts) insert(n, toHit(source));
    },
    stage(n, alerts) {
      for (const source of alerts) staged.push({ n, hit: toHit(source) });
    },
    publish() {
      for (const { n, hit } of staged.splice(0)) insert(n, hit);
    },
    count: () => held,
    bytes: () => chars,
    searches: () => answered,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
