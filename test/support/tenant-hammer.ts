import { randomUUID } from 'node:crypto';
import type { InstallTx, TenantTx, Transaction } from '../../src/db/tenant-context.ts';
import {
  appendUncheckedEvent,
  readEventsAfter,
} from '../../src/domains/events/event-repository.ts';

/** The entry points of an AppDatabase the hammer drives (a pool behind a pooler, or not). */
export interface Scopes {
  withTenant<T>(tenantId: string, fn: (tx: TenantTx) => Promise<T>): Promise<T>;
  withoutTenant<T>(fn: (tx: InstallTx) => Promise<T>): Promise<T>;
  unitOfWork<T>(fn: () => Promise<T>): Promise<T>;
}

export interface HammerResult {
  units: number;
  statements: number;
  /** A statement that saw another tenant's context or rows: must stay empty. */
  violations: string[];
  /** An error no unit asked for (a desync, a lost connection, a refused statement). */
  unexpected: string[];
  /** The server processes that answered: fewer than the client connections when pooled. */
  backends: Set<number>;
}

/** Each tenant's events as seeded: the hammer commits nothing, so every read must see these. */
export type Seeded = ReadonlyMap<string, number>;

class Planned extends Error {
  override name = 'Planned';
}

/** Seeds `count` events for each tenant (on any AppDatabase-like entry points). */
export async function seedEvents(
  scopes: Scopes,
  tenants: string[],
  count: number,
): Promise<Seeded> {
  const seeded = new Map<string, number>();
  for (const tenant of tenants) {
    const streamId = randomUUID();
    await scopes.withTenant(tenant, async (tx) => {
      for (let seq = 1; seq <= count; seq++) {
        await appendUncheckedEvent(tx, event(tenant, streamId, seq));
      }
    });
    seeded.set(tenant, count);
  }
  return seeded;
}

function event(tenant: string, streamId: string, streamSeq: number) {
  return {
    tenantId: tenant,
    streamType: 'test',
    streamId,
    streamSeq,
    type: 'alert.created' as const,
    payload: { tenant },
    actor: 'hammer',
  };
}

/**
 * Drives `units` units of work, `concurrency` at a time, over the tenants: single scopes, units
 * of several scopes (in turn and concurrent), rollbacks after a write, and statements that fail
 * mid-transaction. Every statement reads the tenant context, the backend and the owners of every
 * row it can see, in one statement, and the named-statement read checks each row's tenant and
 * the seeded count. Nothing is thrown for a violation: the caller asserts on the result.
 */
export async function hammer(
  scopes: Scopes,
  seeded: Seeded,
  options: { units: number; concurrency: number; seed?: number },
): Promise<HammerResult> {
  const tenants = [...seeded.keys()];
  const result: HammerResult = {
    units: 0,
    statements: 0,
    violations: [],
    unexpected: [],
    backends: new Set(),
  };
  let state = options.seed ?? 1;
  const random = (n: number) => {
    // A fixed LCG: a failing run repeats with the same seed.
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state % n;
  };
  const pick = () => tenants[random(tenants.length)] as string;

  const check = async (tx: Transaction, expected: string | null, where: string) => {
    const { rows } = await tx.query<{ ctx: string | null; pid: number; owners: string[] }>(
      `SELECT current_setting('app.current_tenant_id', true) AS ctx, pg_backend_pid() AS pid,
              coalesce((SELECT array_agg(DISTINCT tenant_id::text) FROM events), '{}') AS owners`,
    );
    result.statements++;
    const row = rows[0];
    if (!row) throw new Error('no row');
    result.backends.add(row.pid);
    const ctx = row.ctx === '' ? null : row.ctx;
    const owners = expected === null ? [] : [expected];
    if (ctx !== expected || JSON.stringify(row.owners) !== JSON.stringify(owners)) {
      result.violations.push(
        `${where}: expected ${expected ?? 'no tenant'}, context ${ctx ?? 'none'}, rows of ${row.owners.join(',') || 'none'} (backend ${row.pid})`,
      );
    }
  };
  const read = async (tx: TenantTx, tenant: string, where: string) => {
    const rows = await readEventsAfter(tx, 0n, 1000);
    result.statements++;
    const foreign = rows.filter((r) => r.tenantId !== tenant);
    if (foreign.length > 0 || rows.length !== seeded.get(tenant)) {
      result.violations.push(
        `${where}: named read for ${tenant} returned ${rows.length} rows (seeded ${seeded.get(tenant)}), ${foreign.length} of other tenants`,
      );
    }
  };
  const tenantScope = (tenant: string, where: string) =>
    scopes.withTenant(tenant, async (tx) => {
      await check(tx, tenant, where);
      await read(tx, tenant, where);
      await check(tx, tenant, where);
    });
  const installScope = (where: string) => scopes.withoutTenant((tx) => check(tx, null, where));
  const expectPlanned = async (run: Promise<unknown>, where: string, code?: string) => {
    try {
      await run;
      result.unexpected.push(`${where}: succeeded, expected a failure`);
    } catch (error) {
      const pgCode = (error as { code?: string }).code;
      if (code ? pgCode !== code : !(error instanceof Planned)) throw error;
    }
  };

  const kinds: ((where: string) => Promise<void>)[] = [
    (where) => tenantScope(pick(), where),
    (where) =>
      scopes.unitOfWork(async () => {
        for (let i = 0; i < 3; i++) {
          if (random(4) === 0) await installScope(`${where}.${i}`);
          else await tenantScope(pick(), `${where}.${i}`);
        }
      }),
    (where) =>
      scopes.unitOfWork(async () => {
        await Promise.all([0, 1, 2].map((i) => tenantScope(pick(), `${where}.${i}`)));
      }),
    (where) => {
      const tenant = pick();
      return expectPlanned(
        scopes.withTenant(tenant, async (tx) => {
          await appendUncheckedEvent(tx, event(tenant, randomUUID(), 1));
          await check(tx, tenant, where);
          throw new Planned('rolled back');
        }),
        where,
      );
    },
    (where) => {
      const tenant = pick();
      return expectPlanned(
        scopes.withTenant(tenant, async (tx) => {
          await check(tx, tenant, where);
          await tx.query('SELECT 1/0');
        }),
        where,
        '22012',
      );
    },
    (where) =>
      scopes.unitOfWork(async () => {
        await tenantScope(pick(), `${where}.before`);
        const failing = pick();
        await expectPlanned(
          scopes.withTenant(failing, async (tx) => {
            await appendUncheckedEvent(tx, event(failing, randomUUID(), 1));
            await tx.query('SELECT 1/0');
          }),
          `${where}.failing`,
          '22012',
        );
        await tenantScope(pick(), `${where}.after`);
      }),
  ];

  let next = 0;
  const lane = async () => {
    while (next < options.units) {
      const n = next++;
      const kind = random(kinds.length);
      const where = `unit ${n} (kind ${kind})`;
      try {
        await (kinds[kind] as (w: string) => Promise<void>)(where);
      } catch (error) {
        result.unexpected.push(`${where}: ${(error as Error).message}`);
      }
      result.units++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, lane));
  return result;
}
