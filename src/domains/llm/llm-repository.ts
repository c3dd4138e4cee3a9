import type * as s from 'zapatos/schema';
import type { TriagePolicy } from '../../../contracts/triage-policy.ts';
import type { Narrowed } from '../../db/rows.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import type {
  CachedAnswer,
  DailyBudget,
  Reservation,
  StoredLlmConfig,
  UsageDay,
} from './llm-types.ts';

/**
 * SQL on `llm_cache`, `llm_usage` and `triage_policies`, plus the one read of the tenant's
 * stored configuration the LLM settings come from. Every function runs under RLS.
 */

/**
 * `llm` of the applied configuration revision (stored without the key, docs/orchestrator.md;
 * a revision still rolling out is not in effect yet); undefined when the tenant runs on the
 * install defaults.
 */
export async function findLlmConfig(
  tx: TenantTx,
  tenantId: string,
): Promise<StoredLlmConfig | undefined> {
  const { rows } = await tx.query<{ llm: StoredLlmConfig | null }>(
    `SELECT e.details->'config'->'llm' AS llm
       FROM tenant_lifecycle_events e JOIN tenants t ON t.id = e.tenant_id
      WHERE e.tenant_id = $1 AND e.kind = 'config_revision'
        AND e.config_revision = t.config_revision`,
    [tenantId],
  );
  return rows[0]?.llm ?? undefined;
}

export type StoredPolicy = Narrowed<
  Pick<s.triage_policies.Selectable, 'policy' | 'updated_at'>,
  { policy: TriagePolicy }
>;

export async function findPolicy(
  tx: TenantTx,
  tenantId: string,
): Promise<StoredPolicy | undefined> {
  const { rows } = await tx.query<StoredPolicy>(
    'SELECT policy, updated_at FROM triage_policies WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0];
}

export async function upsertPolicy(
  tx: TenantTx,
  row: Narrowed<
    Pick<s.triage_policies.Insertable, 'tenant_id' | 'policy' | 'updated_at' | 'updated_by'>,
    { policy: TriagePolicy }
  >,
): Promise<StoredPolicy> {
  const { rows } = await tx.query<StoredPolicy>(
    `INSERT INTO triage_policies (tenant_id, policy, updated_at, updated_by)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id) DO UPDATE
       SET policy = excluded.policy, updated_at = excluded.updated_at,
           updated_by = excluded.updated_by
     RETURNING policy, updated_at`,
    [row.tenant_id, JSON.stringify(row.policy), row.updated_at, row.updated_by],
  );
  const stored = rows[0];
  if (!stored) throw new Error('triage policy upsert returned no row');
  return stored;
}

/** The cached answer for `promptHash`, its hit counted in the same statement; or undefined. */
export async function takeCachedAnswer(
  tx: TenantTx,
  key: { tenantId: string; promptHash: string; at: Date },
): Promise<CachedAnswer | undefined> {
  const { rows } = await tx.query<CachedAnswer>(
    `UPDATE llm_cache SET hits = hits + 1, last_hit_at = $3
      WHERE tenant_id = $1 AND prompt_hash = $2
      RETURNING response, model, input_tokens, output_tokens`,
    [key.tenantId, key.promptHash, key.at],
  );
  return rows[0];
}

/** A concurrent identical miss may have stored the same prompt first; its row stays. */
export async function insertCachedAnswer(
  tx: TenantTx,
  row: Pick<
    s.llm_cache.Insertable,
    | 'tenant_id'
    | 'prompt_hash'
    | 'provider'
    | 'model'
    | 'response'
    | 'input_tokens'
    | 'output_tokens'
    | 'created_at'
  >,
): Promise<void> {
  await tx.query(
    `INSERT INTO llm_cache
       (tenant_id, prompt_hash, provider, model, response, input_tokens, output_tokens, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (tenant_id, prompt_hash) DO NOTHING`,
    [
      row.tenant_id,
      row.prompt_hash,
      row.provider,
      row.model,
      row.response,
      row.input_tokens,
      row.output_tokens,
      row.created_at,
    ],
  );
}

export async function countCacheHit(tx: TenantTx, tenantId: string, day: string): Promise<void> {
  await tx.query(
    `INSERT INTO llm_usage (tenant_id, day, cache_hits) VALUES ($1, $2, 1)
     ON CONFLICT (tenant_id, day) DO UPDATE SET cache_hits = llm_usage.cache_hits + 1`,
    [tenantId, day],
  );
}

/**
 * Holds `reservation.tokens` of the day's budget, or refuses (false) when spent plus reserved
 * plus this would pass the token limit, or the cost limit is already reached. The condition
 * sits in the UPDATE: concurrent reservations queue on the row lock and each re-checks the
 * row as the one before it left it, so together they never pass the limit.
 */
export async function reserveTokens(
  tx: TenantTx,
  tenantId: string,
  reservation: Reservation,
  limit: DailyBudget,
): Promise<boolean> {
  await tx.query(
    `INSERT INTO llm_usage (tenant_id, day) VALUES ($1, $2) ON CONFLICT (tenant_id, day) DO NOTHING`,
    [tenantId, reservation.day],
  );
  const { rowCount } = await tx.query(
    `UPDATE llm_usage SET reserved_tokens = reserved_tokens + $3
      WHERE tenant_id = $1 AND day = $2
        AND ($4::bigint IS NULL OR input_tokens + output_tokens + reserved_tokens + $3 <= $4)
        AND ($5::numeric IS NULL OR cost_usd < $5)`,
    [tenantId, reservation.day, reservation.tokens, limit.tokens, limit.cost_usd],
  );
  return rowCount === 1;
}

/** Counts a refused call and returns what the day has used. */
export async function countRefusal(
  tx: TenantTx,
  tenantId: string,
  day: string,
): Promise<{ tokens: number; cost_usd: number; reserved_tokens: number }> {
  const { rows } = await tx.query<{ tokens: number; cost_usd: number; reserved_tokens: number }>(
    `UPDATE llm_usage SET refused_over_budget = refused_over_budget + 1
      WHERE tenant_id = $1 AND day = $2
      RETURNING (input_tokens + output_tokens)::float8 AS tokens, cost_usd::float8 AS cost_usd,
                reserved_tokens::float8 AS reserved_tokens`,
    [tenantId, day],
  );
  return rows[0] ?? { tokens: 0, cost_usd: 0, reserved_tokens: 0 };
}

/** Replaces the reservation with what the call actually used. */
export async function settleReservation(
  tx: TenantTx,
  tenantId: string,
  reservation: Reservation,
  spent: { inputTokens: number; outputTokens: number; costUsd: number },
): Promise<void> {
  await tx.query(
    `UPDATE llm_usage
        SET reserved_tokens = greatest(reserved_tokens - $3, 0),
            input_tokens = input_tokens + $4, output_tokens = output_tokens + $5,
            cost_usd = cost_usd + $6, calls = calls + 1, cache_misses = cache_misses + 1
      WHERE tenant_id = $1 AND day = $2`,
    [
      tenantId,
      reservation.day,
      reservation.tokens,
      spent.inputTokens,
      spent.outputTokens,
      spent.costUsd,
    ],
  );
}

export async function releaseReservation(
  tx: TenantTx,
  tenantId: string,
  reservation: Reservation,
): Promise<void> {
  await tx.query(
    `UPDATE llm_usage SET reserved_tokens = greatest(reserved_tokens - $3, 0)
      WHERE tenant_id = $1 AND day = $2`,
    [tenantId, reservation.day, reservation.tokens],
  );
}

/** The `days` UTC days up to `today`, newest first; a day without calls reads as zeros. */
export async function listUsageDays(
  tx: TenantTx,
  tenantId: string,
  today: string,
  days: number,
): Promise<UsageDay[]> {
  const { rows } = await tx.query<UsageDay>(
    `SELECT to_char(d.day, 'YYYY-MM-DD') AS day,
            coalesce(u.input_tokens, 0)::float8 AS input_tokens,
            coalesce(u.output_tokens, 0)::float8 AS output_tokens,
            coalesce(u.cost_usd, 0)::float8 AS cost_usd,
            coalesce(u.reserved_tokens, 0)::float8 AS reserved_tokens,
            coalesce(u.calls, 0)::float8 AS calls,
            coalesce(u.cache_hits, 0)::float8 AS cache_hits,
            coalesce(u.cache_misses, 0)::float8 AS cache_misses,
            coalesce(u.refused_over_budget, 0)::float8 AS refused_over_budget
       FROM generate_series($2::date - ($3::int - 1), $2::date, interval '1 day') AS d (day)
       LEFT JOIN llm_usage u ON u.tenant_id = $1 AND u.day = d.day::date
      ORDER BY d.day DESC`,
    [tenantId, today, days],
  );
  return rows;
}
