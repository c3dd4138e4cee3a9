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

/**
 * Wazuh alerts sort by `timestamp` (the manager's alert time, a date field) and, for alerts of
 * the same millisecond, by `id` (a keyword: `<epoch>.<offset>`, unique per manager), so a page
 * boundary never falls between two alerts that compare equal.
 */
const SORT = [{ timestamp: { order: 'asc' } }, { id: { order: 'asc' } }];

function searchBody(after: SortValue[] | undefined, size: number): Record<string, unknown> {
  const from = after?.[0];
  return {
    size,
    sort: SORT,
    track_total_hits: false,
    // The range lets OpenSearch skip whole daily indices older than the checkpoint before
    // search_after filters inside the rest.
    query:
      typeof from === 'number'
        ? { range: { timestamp: { gte: from, format: 'epoch_millis' } } }
        : { match_all: {} },
    ...(after ? { search_after: after } : {}),
  };
}

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

  return {
    /** The next `size` alerts after `after` (from the beginning when undefined), oldest first. */
    async search(after: SortValue[] | undefined, size: number): Promise<IndexedAlert[]> {
      const { status, text } = await post(
        JSON.stringify(searchBody(after, size)),
        await authorization(),
      );
      if (status !== 200)
        throw new IndexerError(`indexer answered ${status}: ${describeError(text)}`, status);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new IndexerError('the indexer answered 200 with a body that is not JSON', 502);
      }
      return parseHits(body);
    },
    close(): void {
      agent.destroy();
    },
  };
}

export type IndexerClient = ReturnType<typeof createIndexerClient>;
