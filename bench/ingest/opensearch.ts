import { readFileSync, writeFileSync } from 'node:fs';
import { wazuhAlert } from '../../test/support/wazuh-alerts.ts';
import {
  createAlertIndex,
  FILEBEAT_PIPELINE,
  installAlertIndexSetup,
  installWazuhTemplate,
  type OpenSearchTarget,
  openSearchRequest,
} from '../../testcluster/opensearch/alert-index.ts';
import { type OpenSearchNode, startOpenSearch } from '../../testcluster/opensearch/node.ts';

/** Alerts written to a scratch index first: JIT-compiles the write path, learns the mapping. */
const WARMUP_ALERTS = 2_000;

/**
 * The benchmark's Wazuh indexer: ONE real OpenSearch node (testcluster/opensearch/node.ts,
 * docs/testing.md "The real indexer") holding every tenant's alerts, each tenant in its own
 * index under its own pattern (`wazuh-alerts-t<n>-*`, the adapter's SVC_INDEXER_INDEX), with
 * what a tenant's indexer has beside Wazuh's own template: the tenant chart's ingest pipeline
 * and legacy template (testcluster/opensearch/alert-index.ts, as the indexer's sidecar applies
 * them), so every alert carries `svc_ingested_at` and the adapters read in ingest order exactly
 * as in production. Alerts are written as Filebeat writes them: `_bulk` naming its pipeline.
 *
 * Plain node, no security plugin: the plugin's cost is authentication and authorization on
 * every request (one basic-auth check per adapter search), the same for every tenant and
 * independent of svc; with it, this bench would measure TLS and the plugin on the same two
 * cores as svc. One node for every tenant: in production each tenant has its own indexer on
 * its own cores, here the one JVM shares the machine with svc, PostgreSQL and the adapters.
 */

/** `1s`, `200ms` (an index refresh interval) or `true` (every write with `?refresh=true`). */
export type RefreshMode = string;

export interface BenchIndexer {
  readonly node: OpenSearchNode;
  readonly url: string;
  /** The SVC_INDEXER_INDEX of tenant `n` (0-based). */
  patternFor(n: number): string;
  /** Bulk-writes alerts for tenant `n` without making them searchable (the index holds them). */
  stage(n: number, alerts: readonly Record<string, unknown>[]): Promise<void>;
  /** Documents a search sees now, all tenants. */
  visible(): Promise<number>;
  /** One refresh of every tenant's index: the staged alerts become searchable at once. */
  publish(): Promise<void>;
  /** Sets how writes become searchable from now on (an interval, or `true`: per write). */
  refreshMode(mode: RefreshMode): Promise<void>;
  /** One `_bulk` across tenants, as the current refresh mode says. */
  write(batch: readonly { n: number; alert: Record<string, unknown> }[]): Promise<void>;
  /** Searches (query phases) the node has answered over every tenant index, per shard. */
  searches(): Promise<number>;
  /** The JVM's resident set now and its peak (VmHWM) since the last reset, bytes. */
  memory(): { rss: number | undefined; peak: number | undefined };
  resetPeak(): void;
  stop(): Promise<void>;
}

/** The name every tenant index's day is written as (fixed for the run: no midnight rollover). */
function day(): string {
  return new Date().toISOString().slice(0, 10).replaceAll('-', '.');
}

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const kib = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
    )?.[1];
    return kib === undefined ? undefined : Number(kib) * 1024;
  } catch {
    return undefined;
  }
}

async function ok(
  target: OpenSearchTarget,
  method: string,
  path: string,
  body?: unknown,
  contentType?: string,
): Promise<unknown> {
  const answer = await openSearchRequest(target, method, path, body, contentType);
  if (answer.status < 200 || answer.status > 299)
    throw new Error(
      `indexer: ${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 500)}`,
    );
  return answer.body;
}

/** One `_bulk` as Filebeat sends it (naming its pipeline); throws on any item's error. */
async function bulkInto(target: OpenSearchTarget, lines: string[], refresh: boolean) {
  const query = new URLSearchParams({ pipeline: FILEBEAT_PIPELINE });
  if (refresh) query.set('refresh', 'true');
  const body = (await ok(
    target,
    'POST',
    `/_bulk?${query}`,
    `${lines.join('\n')}\n`,
    'application/x-ndjson',
  )) as { errors?: boolean; items?: { index?: { error?: unknown } }[] };
  if (body.errors) {
    const first = body.items?.find((i) => i.index?.error)?.index?.error;
    throw new Error(`indexer: _bulk had errors: ${JSON.stringify(first).slice(0, 500)}`);
  }
}

/** Writes WARMUP_ALERTS into a scratch index, returns its mapping and deletes it. */
async function warmUp(target: OpenSearchTarget): Promise<unknown> {
  const index = 'wazuh-alerts-warmup';
  await createAlertIndex(target, index, { shards: 1, refreshInterval: '-1' });
  const start = new Date();
  for (let from = 0; from < WARMUP_ALERTS; from += 500) {
    const lines: string[] = [];
    for (let i = from; i < from + 500; i++)
      lines.push(
        JSON.stringify({ index: { _index: index } }),
        JSON.stringify(wazuhAlert(i, { start, stepMs: 1, manager: 'warmup' })),
      );
    await bulkInto(target, lines, false);
  }
  const body = (await ok(target, 'GET', `/${index}/_mapping`)) as Record<
    string,
    { mappings: unknown }
  >;
  await ok(target, 'DELETE', `/${index}`);
  return body[index]?.mappings;
}

/**
 * Starts the node, installs Wazuh's template stand-in and the chart's pipeline and template,
 * and creates each tenant's index (`shards` primaries) with refresh off: nothing written is
 * searchable until publish() or refreshMode() says so. Each index is created with the mapping
 * the bench's alerts produce (learned on a scratch index, also warming the JVM's write path):
 * a Wazuh index has its fields mapped by Wazuh's template, while the stand-in template maps
 * new strings dynamically, and 50 indices learning the same fields one cluster-state update at
 * a time would take the first half-minute of the node's life.
 */
export async function startBenchIndexer(input: {
  tenants: number;
  shards: number;
  heapMb: number;
}): Promise<BenchIndexer> {
  const node = await startOpenSearch({ heapMb: input.heapMb });
  const target: OpenSearchTarget = { url: node.url };
  const today = day();
  const indexFor = (n: number) => `wazuh-alerts-t${n + 1}-4.x-${today}`;
  let refreshPerWrite = false;
  try {
    await installWazuhTemplate(target);
    await installAlertIndexSetup(target);
    const mappings = await warmUp(target);
    for (let n = 0; n < input.tenants; n++)
      await ok(target, 'PUT', `/${indexFor(n)}`, {
        settings: {
          'index.number_of_shards': input.shards,
          'index.number_of_replicas': 0,
          'index.refresh_interval': '-1',
        },
        mappings,
      });
  } catch (error) {
    await node.stop();
    throw error;
  }

  async function bulk(lines: string[], refresh: boolean): Promise<void> {
    await bulkInto(target, lines, refresh);
  }
  const action = (n: number) => JSON.stringify({ index: { _index: indexFor(n) } });
  const all = 'wazuh-alerts-t*';

  return {
    node,
    url: node.url,
    patternFor: (n) => `wazuh-alerts-t${n + 1}-*`,
    async stage(n, alerts) {
      // Filebeat's bulk_max_size is 50 by default; 1,000 keeps staging short and is what the
      // tests' helper does too. Staging is not timed.
      for (let from = 0; from < alerts.length; from += 1_000) {
        const lines: string[] = [];
        for (const alert of alerts.slice(from, from + 1_000))
          lines.push(action(n), JSON.stringify(alert));
        await bulk(lines, false);
      }
    },
    async visible() {
      const body = (await ok(target, 'GET', `/${all}/_count`)) as { count: number };
      return body.count;
    },
    async publish() {
      await ok(target, 'POST', `/${all}/_refresh`);
    },
    async refreshMode(mode) {
      refreshPerWrite = mode === 'true';
      await ok(target, 'PUT', `/${all}/_settings`, {
        index: { refresh_interval: refreshPerWrite ? '-1' : mode },
      });
      // Whatever was written under the old mode is searchable before the new one is measured.
      await ok(target, 'POST', `/${all}/_refresh`);
    },
    async write(batch) {
      if (batch.length === 0) return;
      const lines: string[] = [];
      for (const { n, alert } of batch) lines.push(action(n), JSON.stringify(alert));
      await bulk(lines, refreshPerWrite);
    },
    async searches() {
      const body = (await ok(target, 'GET', `/${all}/_stats/search`)) as {
        _all?: { total?: { search?: { query_total?: number } } };
      };
      return body._all?.total?.search?.query_total ?? 0;
    },
    memory: () => ({ rss: status(node.pid, 'VmRSS'), peak: status(node.pid, 'VmHWM') }),
    resetPeak() {
      try {
        writeFileSync(`/proc/${node.pid}/clear_refs`, '5');
      } catch {
        // not ours to reset (another user): the peak then runs from the start
      }
    },
    stop: () => node.stop(),
  };
}
