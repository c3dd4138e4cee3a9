import { INSTALL_SETTING_DEFAULTS } from '../../../contracts/install-settings.ts';
import type { InstallTx, Transaction } from '../../db/tenant-context.ts';
import type { StoredSetting } from './settings-types.ts';

/**
 * SQL on `install_settings` (spec §2.4): one row per key someone set; a key without a row has
 * its documented default (contracts/install-settings.ts). No tenant_id and no RLS.
 */

/**
 * `audit.retention_days` as the retention purge must apply it. Any scope may call it (the
 * purge runs through the system gate).
 */
export async function readAuditRetentionDays(tx: Transaction): Promise<number> {
  const { rows } = await tx.query<{ value: unknown }>(
    `SELECT value FROM install_settings WHERE key = 'audit.retention_days'`,
  );
  if (rows.length === 0) return INSTALL_SETTING_DEFAULTS['audit.retention_days'];
  const value = rows[0]?.value;
  // The API stores integers 1..3650 only; anything else was written by hand, and a purge must
  // not delete audit rows on a guessed window.
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 3650)
    throw new Error(`install_settings audit.retention_days holds ${JSON.stringify(value)}`);
  return value;
}

export async function readSettings(tx: InstallTx): Promise<StoredSetting[]> {
  const { rows } = await tx.query<StoredSetting>(
    'SELECT key, value, updated_at, updated_by FROM install_settings ORDER BY key',
  );
  return rows;
}

/**
 * Holds every writer of install_settings off until the transaction ends, new keys included
 * (row locks would miss a key that has no row yet). Readers are not blocked.
 */
export async function lockSettings(tx: InstallTx): Promise<void> {
  await tx.query('LOCK TABLE install_settings IN SHARE ROW EXCLUSIVE MODE');
}

export async function upsertSetting(tx: InstallTx, row: StoredSetting): Promise<void> {
  await tx.query(
    `INSERT INTO install_settings (key, value, updated_at, updated_by)
     VALUES ($1, $2::jsonb, $3, $4)
     ON CONFLICT (key) DO UPDATE
       SET value = excluded.value, updated_at = excluded.updated_at,
           updated_by = excluded.updated_by`,
    [row.key, JSON.stringify(row.value), row.updated_at, row.updated_by],
  );
}

/** The key returns to its default: a key without a row has its default. */
export async function deleteSetting(tx: InstallTx, key: string): Promise<void> {
  await tx.query('DELETE FROM install_settings WHERE key = $1', [key]);
}
