import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { IndexerSettings } from './settings.ts';

/** A `sort` value of OpenSearch: epoch millis for the date key, the keyword for the tie-breaker. */
export type SortValue = number | string;

export interface IndexedAlert {
  index: string;
  id: string;
  /** The alert document exactly as Wazuh stored it. */
  source: Record<string, unknown>;
  /** Where this hit sits in the sort order: the `search_after` that continues after it. */
  sort: SortValue[];
}

/** The indexer could not be reached or answered with an error (status 0: no answer at all). */
export class IndexerError extends Error {
  override name = 'IndexerError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const REQUEST_TIMEOUT_MS = 30_000;

/** What a search was for, as the read-cost metrics count it (docs/adapter.md "Late alerts"). */
export type SearchPurpose = 'page' | 'unstamped' | 'window' | 'narrow' | 'reread' | 'count';

function isSortValues(value: unknown): value is SortValue[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((v) => typeof v === 'number' || typeof v === 'string')
  );
}

function parseHits(body: unknown): IndexedAlert[] {
  const hits = (body as { hits?: { hits?: unknown } } | null)?.hits?.hits;
  if (!Array.isArray(hits)) throw new IndexerError('the indexer answered without hits.hits', 502);
  return hits.map((hit: Record<string, unknown>) => {
    const source = hit._source;
    if (
      typeof hit._id !== 'string' ||
      typeof source !== 'object' ||
      source === null ||
      !isSortValues(hit.sort)
    ) {
      throw new IndexerError('the indexer answered a hit without _id, _source or sort', 502);
    }
    return {
      index: String(hit._index ?? ''),
      id: hit._id,
      source: source as Record<string, unknown>,
      sort: hit.sort,
    };
  });
}

function parseHistogram(body: Record<string, unknown>): Map<number, number> {
  const buckets = (body.aggregations as { buckets?: { buckets?: unknown } } | undefined)?.buckets
    ?.buckets;
  if (!Array.isArray(buckets))
    throw new IndexerError('the indexer answered without aggregations.buckets', 502);
  const counts = new Map<number, number>();
  for (const b of buckets as { key?: unknown; doc_count?: unknown }[]) {
    if (typeof b.key !== 'number' || typeof b.doc_count !== 'number')
      throw new IndexerError('the indexer answered a bucket without key or doc_count', 502);
    counts.set(b.key, b.doc_count);
  }
  return counts;
}

/** `error.type: reason` of an OpenSearch error body, else the start of the text. */
function describeError(text: string): string {
  try {
    const error = (JSON.parse(text) as { error?: { type?: string; reason?: string } | string })
      .error;
    if (typeof error === 'string') return error;
    if (error?.type) return `${error.type}: ${error.reason ?? ''}`;
  } catch {
    // not JSON
  }
  return text.slice(0, 200);
}

/**
 * The OpenSearch `_search` subset the adapter uses on the tenant's Wazuh indexer: one index
 * pattern, basic auth from the mounted credential files (read per request, so a rotated
 * password needs no restart), TLS with an optional CA bundle.
 */
export function createIndexerClient(settings: IndexerSettings) {
  const url = new URL(`${settings.url}/${settings.index}/_search`);
  const tls = url.protocol === 'https:';
  const agent = tls
    ? new https.Agent({ keepAlive: true, ...(settings.ca ? { ca: settings.ca } : {}) })
    : new http.Agent({ keepAlive: true });

  async function authorization(): Promise<Record<string, string>> {
    if (!settings.usernameFile || !settings.passwordFile) return {};
    const [user, password] = await Promise.all([
      readFile(settings.usernameFile, 'utf8'),
      readFile(settings.passwordFile, 'utf8'),
    ]).catch((error: NodeJS.ErrnoException) => {
      throw new IndexerError(`cannot read the indexer credentials: ${error.code}`, 0);
    });
    const pair = `${user.replace(/\r?\n$/, '')}:${password.replace(/\r?\n$/, '')}`;
    return { authorization: `Basic ${Buffer.from(pair).toString('base64')}` };
  }

  function post(
    body: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const request = (tls ? https : http).request(
        url,
        {
          method: 'POST',
          agent,
          timeout: REQUEST_TIMEOUT_MS,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            'content-length': Buffer.byteLength(body),
            ...headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', (error) => reject(new IndexerError(error.message, 0)));
        },
      );
      request.on('timeout', () => request.destroy(new Error('indexer request timed out')));
      request.on('error', (error) => reject(new IndexerError(error.message, 0)));
      request.end(body);
    });
  }

  async function query(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { status, text } = await post(JSON.stringify(body), await authorization());
    if (status !== 200)
      throw new IndexerError(`indexer answered ${status}: ${describeError(text)}`, status);
    try {
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed === 'object' && parsed !== null) return parsed as Record<string, unknown>;
    } catch {
      // answered below
    }
    throw new IndexerError('the indexer answered 200 with a body that is not a JSON object', 502);
  }

  return {
    /** The hits of a search, in its sort order (each with the `search_after` after it). */
    async page(body: Record<string, unknown>): Promise<IndexedAlert[]> {
      return parseHits(await query(body));
    },
    /** The `buckets` date histogram of an aggregation search: bucket start → documents. */
    async histogram(body: Record<string, unknown>): Promise<Map<number, number>> {
      return parseHistogram(await query(body));
    },
    /** `hits.total.value` of a search sent with `track_total_hits: true`. */
    async total(body: Record<string, unknown>): Promise<number> {
      const total = (await query(body)).hits as { total?: { value?: unknown } } | undefined;
      const value = total?.total?.value;
      if (typeof value !== 'number')
        throw new IndexerError('the indexer answered a count without hits.total.value', 502);
      return value;
    },
    close(): void {
      agent.destroy();
    },
  };
}

export type IndexerClient = ReturnType<typeof createIndexerClient>;
