import type * as s from 'zapatos/schema';
import type { Narrowed } from '../../db/rows.ts';
import type { TenantTx, Transaction } from '../../db/tenant-context.ts';
import type { TenantState } from './tenant-lifecycle.ts';

/**
 * SQL of suspension (docs/operations.md "Suspension"): the tenant state read under a share
 * lock, the data-plane marker the orchestrator keeps, the customers' sessions a suspension
 * revokes, and the jobs parked while it lasts.
 */

/** What the orchestrator last did to the tenant's workloads (sql/0020). */
export type DataPlane = 'running' | 'stopping' | 'stopped';

/**
 * The tenant's state, row-locked against a concurrent suspend or resume until the caller's
 * transaction ends: a sign-in or a parked job decided on `active` cannot commit after the
 * suspension that would have revoked or parked it (the suspend's UPDATE waits for this lock,
 * then sees the new session or job).
 */
export async function lockedTenantState(
  tx: Transaction,
  tenantId: string,
): Promise<TenantState | undefined> {
  const { rows } = await tx.query<
    Narrowed<Pick<s.tenants.Selectable, 'state'>, { state: TenantState }>
  >('SELECT state FROM tenants WHERE id = $1 FOR SHARE', [tenantId]);
  return rows[0]?.state;
}

export async function findDataPlane(
  tx: Transaction,
  tenantId: string,
): Promise<DataPlane | undefined> {
  const { rows } = await tx.query<
    Narrowed<Pick<s.tenants.Selectable, 'data_plane'>, { data_plane: DataPlane }>
  >('SELECT data_plane FROM tenants WHERE id = $1', [tenantId]);
  return rows[0]?.data_plane;
}

export async function setDataPlane(
  tx: Transaction,
  tenantId: string,
  dataPlane: DataPlane,
): Promise<void> {
  await tx.query('UPDATE tenants SET data_plane = $2, updated_at = now() WHERE id = $1', [
    tenantId,
    dataPlane,
  ]);
}

/** Revokes every live session in the tenant (its customers'); returns how many. */
export async function revokeTenantSessions(tx: TenantTx, tenantId: string): Promise<number> {
  const result = await tx.query(
    `UPDATE sessions SET revoked_at = now()
      WHERE revoked_at IS NULL
        AND (tenant_context = $1 OR user_id IN (SELECT id FROM users WHERE tenant_id = $1))`,
    [tenantId],
  );
  return result.rowCount ?? 0;
}

export interface ParkedJob {
  jobType: string;
  input: Record<string, unknown>;
}

export async function parkJob(tx: TenantTx, tenantId: string, job: ParkedJob): Promise<void> {
  await tx.query('INSERT INTO parked_jobs (tenant_id, job_type, input) VALUES ($1, $2, $3)', [
    tenantId,
    job.jobType,
    JSON.stringify(job.input),
  ]);
}

/** Removes and returns the tenant's parked jobs, oldest first. */
export async function takeParkedJobs(tx: TenantTx, tenantId: string): Promise<ParkedJob[]> {
  const { rows } = await tx.query<
    Narrowed<Pick<s.parked_jobs.Selectable, 'job_type' | 'input'>, { input: ParkedJob['input'] }>
  >(
    `WITH taken AS (DELETE FROM parked_jobs WHERE tenant_id = $1 RETURNING id, job_type, input)
     SELECT job_type, input FROM taken ORDER BY id`,
    [tenantId],
  );
  return rows.map((r) => ({ jobType: r.job_type, input: r.input }));
}
