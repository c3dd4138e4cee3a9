import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { ScratchDatabase } from '../../src/db/scratch.ts';
import { clientConfig } from '../../src/db/target.ts';
import { type CpuSnapshot, cpuDelta } from './cpu.ts';

/** What the baseline inserts: the throughput phase's `alert.received` rows, as ingest wrote them. */
interface Row {
  tenant_id: string;
  stream_type: string;
  stream_id: string;
  stream_seq: number;
  type: string;
  payload: string;
  actor: string | null;
  occurred_at: string;
}

export interface BaselineSide {
  name: string;
  rows: number;
  ms: number;
  connections: number;
  /** CPU-seconds meanwhile: PostgreSQL's, and everyone else's on the machine but this process. */
  postgresCpu?: number;
  /** This process's CPU meanwhile: building and sending the rows (the client's share). */
  clientCpu?: number;
  otherCpu?: number;
}

export interface BaselineResult {
  sides: BaselineSide[];
  best: BaselineSide;
}

const COLUMNS = 8;

/** Read before the connections close: a backend that has exited but not been reaped yet counts nowhere. */
function cpuOfSide(before: CpuSnapshot, after: CpuSnapshot) {
  const cpu = cpuDelta(before, after);
  return {
    postgresCpu: cpu.postgres,
    clientCpu: cpu.bench,
    otherCpu: cpu.machine - cpu.postgres - cpu.bench - cpu.adapters - cpu.indexer,
  };
}

/** `INSERT … VALUES ($1, …, $8), ($9, …)`: the plainest batched insert node-postgres sends. */
function insertSql(rows: number): string {
  const tuples = Array.from({ length: rows }, (_, r) => {
    const p = Array.from({ length: COLUMNS }, (_, c) => `$${r * COLUMNS + c + 1}`);
    return `(${p.join(', ')})`;
  });
  return `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor,
                      occurred_at) VALUES ${tuples.join(', ')}`;
}

function values(rows: Row[], tenantId: string): unknown[] {
  return rows.flatMap((r) => [
    tenantId,
    r.stream_type,
    r.stream_id,
    r.stream_seq,
    r.type,
    r.payload,
    r.actor,
    r.occurred_at,
  ]);
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

async function freshTenants(client: pg.Client, count: number, prefix: string): Promise<string[]> {
  const slugs = Array.from({ length: count }, (_, n) => `${prefix}-${n + 1}`);
  const { rows } = await client.query<{ id: string; slug: string }>(
    `INSERT INTO tenants (slug, display_name, state)
     SELECT s, 'Ingest baseline ' || s, 'active' FROM unnest($1::text[]) AS s RETURNING id, slug`,
    [slugs],
  );
  const ids = new Map(rows.map((r) => [r.slug, r.id]));
  return slugs.map((s) => ids.get(s) ?? '');
}

/** Rows grouped by their tenant, in id order within each (the order ingest appended them). */
async function readRows(
  client: pg.Client,
  tenantIds: string[],
  lastEventId: string,
): Promise<Row[][]> {
  const { rows } = await client.query<Row>(
    `SELECT tenant_id, stream_type, stream_id, stream_seq, type, payload::text AS payload, actor,
            occurred_at::text AS occurred_at
       FROM events WHERE tenant_id = ANY($1::uuid[]) AND type = 'alert.received' AND id <= $2
      ORDER BY id`,
    [tenantIds, lastEventId],
  );
  const byTenant = new Map(tenantIds.map((id) => [id, [] as Row[]]));
  for (const row of rows) byTenant.get(row.tenant_id)?.push(row);
  return tenantIds.map((id) => byTenant.get(id) ?? []);
}

/**
 * One connection as svc_mssp, autocommit, one INSERT per batch. svc_mssp bypasses RLS, so the
 * append trigger (sql/0008) takes its install-wide lock: fine for one connection.
 */
async function oneConnection(
  scratch: ScratchDatabase,
  groups: Row[][],
  tenants: string[],
  batch: number,
  cpu: () => CpuSnapshot,
): Promise<BaselineSide> {
  const client = new pg.Client(clientConfig(scratch.target, 'mssp'));
  await client.connect();
  try {
    const before = cpu();
    const started = performance.now();
    let rows = 0;
    for (const [n, group] of groups.entries())
      for (const part of chunks(group, batch)) {
        await client.query(insertSql(part.length), values(part, tenants[n] as string));
        rows += part.length;
      }
    const ms = performance.now() - started;
    return {
      name: 'one connection (svc_mssp)',
      rows,
      ms,
      connections: 1,
      ...cpuOfSide(before, cpu()),
    };
  } finally {
    await client.end();
  }
}

/**
 * One connection per tenant at once, as the adapters were, each as svc_app under its tenant
 * (the per-tenant append lock, so tenants do not wait for each other): BEGIN, set_config, the
 * INSERT, COMMIT per batch — the least a tenant-scoped append can be.
 */
async function perTenant(
  scratch: ScratchDatabase,
  groups: Row[][],
  tenants: string[],
  batch: number,
  cpu: () => CpuSnapshot,
): Promise<BaselineSide> {
  const clients = await Promise.all(
    tenants.map(async () => {
      const client = new pg.Client(clientConfig(scratch.target, 'app'));
      await client.connect();
      return client;
    }),
  );
  try {
    const before = cpu();
    const started = performance.now();
    const counts = await Promise.all(
      clients.map(async (client, n) => {
        const tenantId = tenants[n] as string;
        let rows = 0;
        for (const part of chunks(groups[n] ?? [], batch)) {
          await client.query('BEGIN');
          await client.query("SELECT set_config('app.current_tenant_id', $1, true)", [tenantId]);
          await client.query(insertSql(part.length), values(part, tenantId));
          await client.query('COMMIT');
          rows += part.length;
        }
        return rows;
      }),
    );
    const ms = performance.now() - started;
    return {
      name: `${clients.length} connections (svc_app, one per tenant)`,
      rows: counts.reduce((a, b) => a + b, 0),
      ms,
      connections: clients.length,
      ...cpuOfSide(before, cpu()),
    };
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

/**
 * The same `alert.received` rows INSERTed plainly into the same `events` table (its indexes,
 * constraints and triggers), for fresh tenants so the (tenant, stream, seq) keys are new.
 */
export async function baselinePhase(input: {
  scratch: ScratchDatabase;
  tenantIds: string[];
  lastEventId: string;
  batch: number;
  cpu: () => CpuSnapshot;
}): Promise<BaselineResult> {
  const { scratch, batch } = input;
  // Reading every tenant's rows needs BYPASSRLS; tenants are created the way svc does (svc_app).
  const reader = new pg.Client(clientConfig(scratch.target, 'mssp'));
  const app = new pg.Client(clientConfig(scratch.target, 'app'));
  await Promise.all([reader.connect(), app.connect()]);
  let groups: Row[][];
  let single: string[];
  let concurrent: string[];
  try {
    groups = await readRows(reader, input.tenantIds, input.lastEventId);
    single = await freshTenants(app, groups.length, 'ingest-baseline-a');
    concurrent = await freshTenants(app, groups.length, 'ingest-baseline-b');
  } finally {
    await Promise.all([reader.end(), app.end()]);
  }
  const rows = groups.reduce((a, g) => a + g.length, 0);
  console.log(`\nbaseline: ${rows.toLocaleString('en')} alert.received rows, batches of ${batch}`);
  const sides = [
    await oneConnection(scratch, groups, single, batch, input.cpu),
    await perTenant(scratch, groups, concurrent, batch, input.cpu),
  ];
  for (const side of sides)
    console.log(
      `  ${side.name}: ${side.rows.toLocaleString('en')} rows in ${(side.ms / 1000).toFixed(2)} s` +
        ` = ${Math.round((side.rows / side.ms) * 1000).toLocaleString('en')} rows/s;` +
        ` CPU: PostgreSQL ${side.postgresCpu?.toFixed(1)} s, client ${side.clientCpu?.toFixed(1)} s,` +
        ` other ${side.otherCpu?.toFixed(1)} s`,
    );
  const best = sides.reduce((a, b) => (b.rows / b.ms > a.rows / a.ms ? b : a));
  return { sides, best };
}
