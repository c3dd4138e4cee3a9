import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { issueBootstrapCredential } from '../../src/domains/adapter/adapter-service.ts';
import {
  countAlerts,
  createAlertIndex,
  indexAlerts,
  installAlertIndexSetup,
  installWazuhTemplate,
  type OpenSearchTarget,
  refreshIndex,
} from '../../testcluster/opensearch/alert-index.ts';
import { adapterEnv, createSecretMounts, type SecretMounts } from '../support/adapter-process.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { type IndexerStandIn, startIndexerStandIn } from '../support/indexer-stand-in.ts';
import { sharedOpenSearch } from '../support/opensearch.ts';

export const INDEXER_USER = 'admin';
export const INDEXER_PASSWORD = 'indexer-Secret-9';

export interface AdapterTenant {
  tenantId: string;
  mounts: SecretMounts;
  /** The chart's environment for this tenant's adapter, at svc `apiUrl` and `indexer`. */
  env(
    apiUrl: string,
    indexer: Pick<IndexerStandIn, 'url'>,
    extra?: Record<string, string>,
  ): Record<string, string>;
}

/**
 * A tenant as provisioning leaves it for its adapter: a bootstrap credential issued and
 * written into the bootstrap Secret's mount, the indexer login in files beside it.
 */
export async function adapterTenant(db: TestDatabase, slug?: string): Promise<AdapterTenant> {
  const tenantId = await createTenant(db.pools.app, slug);
  const { secret } = await db.app.withTenant(tenantId, (tx) =>
    issueBootstrapCredential(tx, tenantId),
  );
  const mounts = await createSecretMounts();
  await mounts.writeBootstrap({ 'tenant-id': tenantId, credential: secret });
  const username = path.join(mounts.root, 'indexer-username');
  const password = path.join(mounts.root, 'indexer-password');
  await writeFile(username, `${INDEXER_USER}\n`);
  await writeFile(password, `${INDEXER_PASSWORD}\n`);
  return {
    tenantId,
    mounts,
    env: (apiUrl, indexer, extra = {}) =>
      adapterEnv({
        apiUrl,
        tenantId,
        indexerUrl: indexer.url,
        mounts,
        extra: {
          SVC_INDEXER_USERNAME_FILE: username,
          SVC_INDEXER_PASSWORD_FILE: password,
          ...extra,
        },
      }),
  };
}

/** Ground truth through the BYPASSRLS role: how often each source id was stored as an event. */
export async function storedSourceIds(
  db: TestDatabase,
  tenantId: string,
): Promise<Map<string, number>> {
  const { rows } = await db.pools.mssp.query<{ source_id: string; n: string }>(
    `SELECT payload->>'source_id' AS source_id, count(*) AS n FROM events
      WHERE tenant_id = $1 AND type = 'alert.received' GROUP BY 1`,
    [tenantId],
  );
  return new Map(rows.map((r) => [r.source_id, Number(r.n)]));
}

export async function alertEventCount(db: TestDatabase, tenantId: string): Promise<number> {
  const { rows } = await db.pools.mssp.query<{ n: string }>(
    `SELECT count(*) AS n FROM events WHERE tenant_id = $1 AND type = 'alert.received'`,
    [tenantId],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Polls until `check` holds; throws with the last value after `timeoutMs`. A read that does not
 * answer by the deadline fails the wait too (a read blocked on a lock would otherwise outlive it).
 */
export async function eventually<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  timeoutMs = 45_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const bounded = () => within('a read', Math.max(deadline - Date.now(), 0) + 5_000, read());
  let value = await bounded();
  while (!check(value)) {
    if (Date.now() > deadline)
      throw new Error(`condition not met; last value: ${JSON.stringify(value)}`);
    await sleep(100);
    value = await bounded();
  }
  return value;
}

/**
 * `work`, or an error naming `what` once `ms` pass without an answer; `explain` adds what the
 * parts were doing then (the error is the only trace a CI run keeps).
 */
export async function within<T>(
  what: string,
  ms: number,
  work: Promise<T>,
  explain?: () => Promise<string>,
): Promise<T> {
  const timer = new AbortController();
  const late = sleep(ms, undefined, { signal: timer.signal }).then(async () => {
    const detail = explain ? await explain().catch((error) => `(explain failed: ${error})`) : '';
    throw new Error(`${what} did not finish within ${ms} ms${detail ? `\n${detail}` : ''}`);
  });
  late.catch(() => undefined);
  try {
    return await Promise.race([work, late]);
  } finally {
    timer.abort();
  }
}

/** Lock waits in the test database: what a blocked read or write waits for, and on whom. */
export async function lockWaits(db: TestDatabase): Promise<string> {
  const { rows } = await db.pools.admin.query(
    `SELECT pid, locktype, mode, relation::regclass::text AS relation, pg_blocking_pids(pid) AS blocked_by
       FROM pg_locks WHERE NOT granted`,
  );
  return `lock waits: ${JSON.stringify(rows)}`;
}

/** One file's rig: a test database, the real app, a stand-in indexer and one adapter tenant. */
export interface AdapterRig {
  db: TestDatabase;
  api: TestApi;
  indexer: IndexerStandIn;
  tenant: AdapterTenant;
}

/**
 * Registers the before/after hooks that build and remove an AdapterRig for a test file; the
 * returned object's fields are set once `before` has run.
 */
export function useAdapterRig(slug: string): AdapterRig {
  const rig = {} as AdapterRig;
  before(async () => {
    rig.db = await createTestDatabase();
    rig.api = await startTestApi(rig.db);
    rig.indexer = await startIndexerStandIn({ username: INDEXER_USER, password: INDEXER_PASSWORD });
    rig.tenant = await adapterTenant(rig.db, slug);
  });
  after(async () => {
    await rig.indexer?.close();
    await rig.api?.close();
    await rig.tenant?.mounts.remove();
    await rig.db?.drop();
  });
  return rig;
}

/**
 * A test's own alert indices on the run's shared real OpenSearch node, set up as a tenant
 * indexer is: the chart's ingest pipeline and template (testcluster/opensearch/alert-index.ts)
 * over a stand-in of Wazuh's. Its indices all match `pattern` (`wazuh-alerts-t<random>-*`, so
 * the templates apply and no other test's alerts are seen): the adapter's SVC_INDEXER_INDEX.
 */
export interface AlertIndices {
  url: string;
  target: OpenSearchTarget;
  pattern: string;
  /** `<pattern without *><name>`, created with `shards` primaries and `refreshInterval`. */
  create(name: string, options?: { shards?: number; refreshInterval?: string }): Promise<string>;
  /** Writes through Filebeat's pipeline (and the chart's final pipeline). */
  write(
    index: string,
    alerts: readonly Record<string, unknown>[],
    options?: { refresh?: 'wait_for' | false },
  ): Promise<void>;
  refresh(index: string): Promise<void>;
  /** Documents a search of the whole pattern sees now. */
  count(): Promise<number>;
  /** The environment the adapter needs for these indices. */
  env(extra?: Record<string, string>): Record<string, string>;
}

let setUp: Promise<void> | undefined;

export async function alertIndices(): Promise<AlertIndices> {
  const node = await sharedOpenSearch();
  const target: OpenSearchTarget = { url: node.url };
  setUp ??= installWazuhTemplate(target).then(() => installAlertIndexSetup(target));
  await setUp;
  const prefix = `wazuh-alerts-t${randomBytes(5).toString('hex')}-`;
  return {
    url: node.url,
    target,
    pattern: `${prefix}*`,
    async create(name, options = {}) {
      await createAlertIndex(target, `${prefix}${name}`, options);
      return `${prefix}${name}`;
    },
    write: (index, alerts, options = {}) =>
      indexAlerts(target, index, alerts, { refresh: options.refresh ?? false }),
    refresh: (index) => refreshIndex(target, index),
    count: () => countAlerts(target, `${prefix}*`),
    env: (extra = {}) => ({ SVC_INDEXER_INDEX: `${prefix}*`, ...extra }),
  };
}

/** The adapter's stored checkpoint, as svc holds it (through the BYPASSRLS role). */
export async function storedCheckpoint(
  db: TestDatabase,
  tenantId: string,
): Promise<{ search_after: (number | string)[]; [key: string]: unknown } | undefined> {
  const { rows } = await db.pools.mssp.query<{
    position: { search_after: (number | string)[] };
  }>(`SELECT position FROM ingest_checkpoints WHERE tenant_id = $1`, [tenantId]);
  return rows[0]?.position;
}

/** One sample of the adapter's `/metrics` (0 when absent). */
export async function adapterMetric(port: number, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** One file's rig on the real engine: a test database, the real app, one adapter tenant. */
export interface RealAdapterRig {
  db: TestDatabase;
  api: TestApi;
  tenant: AdapterTenant;
}

/** Like useAdapterRig, with the indexer left to each test (alertIndices on the shared node). */
export function useRealAdapterRig(slug: string): RealAdapterRig {
  const rig = {} as RealAdapterRig;
  before(async () => {
    rig.db = await createTestDatabase();
    rig.api = await startTestApi(rig.db);
    rig.tenant = await adapterTenant(rig.db, slug);
  });
  after(async () => {
    await rig.api?.close();
    await rig.tenant?.mounts.remove();
    await rig.db?.drop();
  });
  return rig;
}
