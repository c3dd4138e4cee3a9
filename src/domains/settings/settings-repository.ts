import * as db from 'zapatos/db';
import type * as s from 'zapatos/schema';
import { INSTALL_SETTING_DEFAULTS } from '../../../contracts/install-settings.ts';
import type { InstallTx, Transaction } from '../../db/tenant-context.ts';
import type { StoredSetting } from './settings-types.ts';

/**
 * SQL on `install_settings` (spec §2.4): one row per key someone set; a key without a row has
 * its documented default (contracts/install-settings.ts). No tenant_id and no RLS. Written as
 * zapatos templates: every table and column name below is checked against the schema's types.
 */

type Sql = s.install_settings.SQL;

/**
 * `audit.retention_days` as the retention purge must apply it. Any scope may call it (the
 * purge runs through the system gate).
 */
export async function readAuditRetentionDays(tx: Transaction): Promise<number> {
  const rows = await db.sql<Sql, Pick<s.install_settings.Selectable, 'value'>[]>`
    SELECT ${'value'} FROM ${'install_settings'}
     WHERE ${'key'} = ${db.param('audit.retention_days')}`.run(tx);
  if (rows.length === 0) return INSTALL_SETTING_DEFAULTS['audit.retention_days'];
  const value = rows[0]?.value;
  // The API stores integers 1..3650 only; anything else was written by hand, and a purge must
  // not delete audit rows on a guessed window.
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 3650)
    throw new Error(`install_settings audit.retention_days holds ${JSON.stringify(value)}`);
  return value;
}

export async function readSettings(tx: InstallTx): Promise<StoredSetting[]> {
  return db.sql<Sql, StoredSetting[]>`
    SELECT ${db.cols(['key', 'value', 'updated_at', 'updated_by'])}
      FROM ${'install_settings'} ORDER BY ${'key'}`.run(tx);
}

/**
 * Holds every writer of install_settings off until the transaction ends, new keys included
 * (row locks would miss a key that has no row yet). Readers are not blocked.
 */
export async function lockSettings(tx: InstallTx): Promise<void> {
  await db.sql<Sql>`LOCK TABLE ${'install_settings'} IN SHARE ROW EXCLUSIVE MODE`.run(tx);
}

export async function upsertSetting(tx: InstallTx, row: StoredSetting): Promise<void> {
  await db.sql<Sql>`
    INSERT INTO ${'install_settings'} (${'key'}, ${'value'}, ${'updated_at'}, ${'updated_by'})
    VALUES (${db.param(row.key)}, ${db.param(JSON.stringify(row.value), 'jsonb')},
            ${db.param(row.updated_at)}, ${db.param(row.updated_by)})
    ON CONFLICT (${'key'}) DO UPDATE
      SET ${'value'} = EXCLUDED.${'value'}, ${'updated_at'} = EXCLUDED.${'updated_at'},
          ${'updated_by'} = EXCLUDED.${'updated_by'}`.run(tx);
}

/** The key returns to its default: a key without a row has its default. */
export async function deleteSetting(tx: InstallTx, key: string): Promise<void> {
  await db.sql<Sql>`DELETE FROM ${'install_settings'} WHERE ${'key'} = ${db.param(key)}`.run(tx);
}
