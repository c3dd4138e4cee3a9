import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { fileURLToPath } from 'node:url';

/**
 * The alert side of a tenant indexer, set up on a real OpenSearch node the way a tenant's
 * indexer gets it: the tenant chart's ingest pipeline and legacy index template
 * (charts/svc-tenant/charts/monitor/files/, applied with the same two REST calls as the
 * indexer's security-config sidecar, docs/adapter.md "Late alerts"), a stand-in of Wazuh's own
 * legacy template and Filebeat's per-request pipeline (so a test proves the two merge), and
 * helpers to create `wazuh-alerts-*` indices with a given number of shards and refresh
 * interval, write alerts the way Filebeat does (`_bulk` naming its own pipeline) and refresh.
 */

const FILES = fileURLToPath(
  new URL('../../charts/svc-tenant/charts/monitor/files/', import.meta.url),
);

/** The chart's ingest pipeline: stamps `svc_ingested_at` with `_ingest.timestamp`. */
export const INGEST_PIPELINE = { id: 'svc-ingest-time', file: 'svc-ingest-time-pipeline.json' };
/** The chart's legacy template for `wazuh-alerts-*`: the pipeline as `index.final_pipeline`. */
export const ALERT_TEMPLATE = { name: 'svc-alerts', file: 'svc-alerts-template.json' };
/** The field the pipeline writes (src/adapter/alert-order.ts reads it). */
export const INGESTED_AT = 'svc_ingested_at';
/** Filebeat's Wazuh module names this pipeline in every `_bulk` it sends. */
export const FILEBEAT_PIPELINE = 'filebeat-7.10.2-wazuh-alerts-pipeline';

export interface OpenSearchTarget {
  url: string;
  username?: string;
  password?: string;
  /** PEM: the CA to trust, and a client certificate (the admin certificate on a secured node). */
  ca?: string;
  cert?: string;
  key?: string;
  /** The name the node's certificate carries, when `url` dials it by another (a forwarder). */
  servername?: string;
}

export interface OpenSearchAnswer {
  status: number;
  body: unknown;
}

/** One of the chart's files, parsed. */
export function chartFile(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(`${FILES}${name}`, 'utf8')) as Record<string, unknown>;
}

/** The REST calls the sidecar makes, in order (docs/adapter.md "Late alerts" lists them). */
export function alertIndexSetupCalls(): { method: 'PUT'; path: string; body: unknown }[] {
  return [
    {
      method: 'PUT',
      path: `/_ingest/pipeline/${INGEST_PIPELINE.id}`,
      body: chartFile(INGEST_PIPELINE.file),
    },
    {
      method: 'PUT',
      path: `/_template/${ALERT_TEMPLATE.name}`,
      body: chartFile(ALERT_TEMPLATE.file),
    },
  ];
}

export function openSearchRequest(
  target: OpenSearchTarget,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<OpenSearchAnswer> {
  const url = new URL(path, target.url);
  const tls = url.protocol === 'https:';
  const text =
    body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const auth =
    target.username === undefined
      ? {}
      : {
          authorization: `Basic ${Buffer.from(`${target.username}:${target.password ?? ''}`).toString('base64')}`,
        };
  return new Promise((resolve, reject) => {
    const request = (tls ? https : http).request(
      url,
      {
        method,
        headers: {
          accept: 'application/json',
          ...(text === undefined
            ? {}
            : { 'content-type': contentType, 'content-length': Buffer.byteLength(text) }),
          ...auth,
        },
        ...(tls ? { ca: target.ca, cert: target.cert, key: target.key } : {}),
        ...(tls && target.servername ? { servername: target.servername } : {}),
        timeout: 120_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = raw;
          try {
            parsed = raw === '' ? undefined : JSON.parse(raw);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`${method} ${path} timed out`)));
    request.on('error', reject);
    request.end(text);
  });
}

async function ok(
  target: OpenSearchTarget,
  method: string,
  path: string,
  body?: unknown,
  contentType?: string,
): Promise<unknown> {
  const answer = await openSearchRequest(target, method, path, body, contentType);
  if (answer.status < 200 || answer.status > 299) {
    throw new Error(
      `${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 500)}`,
    );
  }
  return answer.body;
}

/** The chart's pipeline and template, applied exactly as the indexer's sidecar applies them. */
export async function installAlertIndexSetup(target: OpenSearchTarget): Promise<void> {
  for (const call of alertIndexSetupCalls()) await ok(target, call.method, call.path, call.body);
}

/**
 * A stand-in of what Wazuh installs beside it: its legacy `wazuh` template (order 0: 3 shards,
 * a 5 s refresh, `timestamp` a date and strings as keywords, as wazuh-template.json has them)
 * and Filebeat's alerts pipeline (which sets `@timestamp` from `timestamp`).
 */
export async function installWazuhTemplate(target: OpenSearchTarget): Promise<void> {
  await ok(target, 'PUT', '/_template/wazuh', {
    order: 0,
    index_patterns: ['wazuh-alerts-4.x-*', 'wazuh-alerts-*'],
    settings: {
      'index.refresh_interval': '5s',
      'index.number_of_shards': 3,
      'index.number_of_replicas': 0,
      'index.mapping.total_fields.limit': 10_000,
    },
    mappings: {
      dynamic_templates: [
        {
          string_as_keyword: { match_mapping_type: 'string', mapping: { type: 'keyword' } },
        },
      ],
      date_detection: false,
      properties: {
        '@timestamp': { type: 'date' },
        timestamp: { type: 'date', format: 'date_optional_time||epoch_millis' },
        id: { type: 'keyword' },
        full_log: { type: 'text' },
      },
    },
  });
  await ok(target, 'PUT', `/_ingest/pipeline/${FILEBEAT_PIPELINE}`, {
    description: 'stand-in of the Wazuh Filebeat module pipeline',
    processors: [
      {
        date: {
          field: 'timestamp',
          target_field: '@timestamp',
          formats: ['ISO8601', "yyyy-MM-dd'T'HH:mm:ss.SSSZ"],
          ignore_failure: true,
        },
      },
    ],
  });
}

/**
 * Creates an alert index (its settings override the templates'): `shards` primaries, no
 * replicas, and `refreshInterval` (`'-1'` holds every write invisible until `refreshIndex`).
 */
export async function createAlertIndex(
  target: OpenSearchTarget,
  name: string,
  options: { shards?: number; refreshInterval?: string } = {},
): Promise<void> {
  await ok(target, 'PUT', `/${encodeURIComponent(name)}`, {
    settings: {
      'index.number_of_shards': options.shards ?? 3,
      'index.number_of_replicas': 0,
      'index.refresh_interval': options.refreshInterval ?? '1s',
    },
  });
}

/**
 * Writes alerts as Filebeat does: one `_bulk` naming Filebeat's pipeline (the template's
 * final pipeline runs after it). `refresh`: `'wait_for'` returns once they are searchable,
 * `false` (default) leaves it to the index's refresh interval.
 */
export async function indexAlerts(
  target: OpenSearchTarget,
  index: string,
  alerts: readonly Record<string, unknown>[],
  options: { refresh?: 'wait_for' | 'true' | false; pipeline?: string | null } = {},
): Promise<void> {
  for (let from = 0; from < alerts.length; from += 5_000) {
    const lines: string[] = [];
    for (const alert of alerts.slice(from, from + 5_000)) {
      lines.push(JSON.stringify({ index: { _index: index } }), JSON.stringify(alert));
    }
    const query = new URLSearchParams();
    const pipeline = options.pipeline === undefined ? FILEBEAT_PIPELINE : options.pipeline;
    if (pipeline !== null) query.set('pipeline', pipeline);
    if (options.refresh) query.set('refresh', options.refresh);
    const body = (await ok(
      target,
      'POST',
      `/_bulk?${query}`,
      `${lines.join('\n')}\n`,
      'application/x-ndjson',
    )) as { errors?: boolean; items?: { index?: { error?: unknown } }[] };
    if (body.errors) {
      const first = body.items?.find((i) => i.index?.error)?.index?.error;
      throw new Error(`_bulk into ${index} had errors: ${JSON.stringify(first).slice(0, 500)}`);
    }
  }
}

/** Makes everything written to `index` searchable now. */
export async function refreshIndex(target: OpenSearchTarget, index: string): Promise<void> {
  await ok(target, 'POST', `/${encodeURIComponent(index)}/_refresh`);
}

/** Documents in `index` (or a pattern) that a search sees now. */
export async function countAlerts(target: OpenSearchTarget, index: string): Promise<number> {
  const body = (await ok(target, 'GET', `/${encodeURIComponent(index)}/_count`)) as {
    count: number;
  };
  return body.count;
}

export async function deleteIndex(target: OpenSearchTarget, index: string): Promise<void> {
  await ok(target, 'DELETE', `/${encodeURIComponent(index)}?ignore_unavailable=true`);
}
