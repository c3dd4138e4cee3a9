// Install settings (spec §2.2, §2.4): read by every MSSP role, changed by platform_admin,
// audited as `settings.update` with the values before and after, in the same transaction.
import { Compile } from 'typebox/compile';
import {
  INSTALL_SETTING_DEFAULTS,
  INSTALL_SETTINGS,
  type InstallSettingKey,
  type InstallSettingValues,
} from '../../../contracts/install-settings.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { InstallTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { deleteSetting, lockSettings, readSettings, upsertSetting } from './settings-repository.ts';
import {
  InvalidSettingsError,
  type SettingProblem,
  SettingsChangedError,
  type SettingsView,
  type StoredSetting,
} from './settings-types.ts';

const KEYS = Object.keys(INSTALL_SETTINGS) as InstallSettingKey[];
const isKey = (key: string): key is InstallSettingKey => Object.hasOwn(INSTALL_SETTINGS, key);
const checkers = new Map(KEYS.map((key) => [key, Compile(INSTALL_SETTINGS[key])]));

/** RFC 6901: a key with `/` or `~` still names one member. */
const pointer = (key: string) => `/settings/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;

/**
 * Why `change` cannot be applied, key by key; empty when it can. The HTTP layer asks before
 * the body schema does, so an unknown key is 422 `invalid_settings`, not a generic 400.
 */
export function settingProblems(change: Record<string, unknown>): SettingProblem[] {
  return Object.entries(change).flatMap(([key, value]) => {
    if (!isKey(key)) return [{ path: pointer(key), message: 'is not an install setting' }];
    const check = checkers.get(key);
    if (value === null || !check || check.Check(value)) return [];
    return check.Errors(value).map((e) => ({ path: pointer(key), message: e.message }));
  });
}

/** The effective value of every key: the stored one, else the default. */
function effective(rows: StoredSetting[]): InstallSettingValues {
  const values = { ...INSTALL_SETTING_DEFAULTS };
  for (const row of rows) if (isKey(row.key)) values[row.key] = row.value as never;
  return values;
}

/** The newest change of any key: the token a PUT may send back as `expected_updated_at`. */
function newest(rows: StoredSetting[]): Date | null {
  return rows.reduce<Date | null>(
    (latest, row) => (latest === null || row.updated_at > latest ? row.updated_at : latest),
    null,
  );
}

function viewOf(rows: StoredSetting[]): SettingsView {
  const values = effective(rows);
  const entry = (key: InstallSettingKey) => {
    const row = rows.find((r) => r.key === key);
    return {
      value: values[key],
      default: INSTALL_SETTING_DEFAULTS[key],
      is_default: row === undefined,
      updated_at: row?.updated_at ?? null,
      updated_by: row?.updated_by ?? null,
    };
  };
  return {
    settings: { 'audit.retention_days': entry('audit.retention_days') },
    updated_at: newest(rows),
  };
}

export interface SettingsChange {
  /** New values by key; null returns a key to its default. */
  settings: Record<string, unknown>;
  /** The `updated_at` the caller read; absent: no check (last write wins). */
  expected_updated_at?: string | null | undefined;
}

export function createSettingsService(deps: { db: AppDatabase; now: () => Date }) {
  /**
   * Keys whose stored state the change alters: setting a key that has no row (even to its
   * default, which then stays when the default changes), or resetting one that has.
   */
  const changedKeys = (rows: StoredSetting[], change: Record<string, unknown>) =>
    KEYS.filter((key) => {
      if (!(key in change)) return false;
      const row = rows.find((r) => r.key === key);
      if (change[key] === null) return row !== undefined;
      return row === undefined || JSON.stringify(row.value) !== JSON.stringify(change[key]);
    });

  async function apply(
    tx: InstallTx,
    userId: string,
    change: SettingsChange,
  ): Promise<SettingsView> {
    await lockSettings(tx);
    const rows = await readSettings(tx);
    const current = newest(rows);
    if (change.expected_updated_at !== undefined) {
      const expected =
        change.expected_updated_at === null ? null : new Date(change.expected_updated_at);
      if (expected?.getTime() !== current?.getTime()) throw new SettingsChangedError(current);
    }
    const keys = changedKeys(rows, change.settings);
    if (keys.length === 0) return viewOf(rows);
    const before = effective(rows);
    const at = deps.now();
    for (const key of keys) {
      const value = change.settings[key];
      if (value === null) await deleteSetting(tx, key);
      else await upsertSetting(tx, { key, value, updated_at: at, updated_by: userId });
    }
    const after = await readSettings(tx);
    await writeAudit(tx, {
      tenantId: null,
      actorPrincipal: 'User',
      actorId: userId,
      action: 'settings.update',
      resourceType: 'install_settings',
      resourceId: null,
      before: Object.fromEntries(keys.map((key) => [key, before[key]])),
      after: Object.fromEntries(keys.map((key) => [key, effective(after)[key]])),
      details: { reset_to_default: keys.filter((key) => change.settings[key] === null) },
    });
    return viewOf(after);
  }

  return {
    read: (): Promise<SettingsView> =>
      deps.db.withoutTenant(async (tx) => viewOf(await readSettings(tx))),

    /**
     * Sets the keys `change` names (a partial update). Refusals write nothing:
     * InvalidSettingsError for an unknown key or a bad value, SettingsChangedError when
     * `expected_updated_at` is stale. A change that alters nothing is not audited.
     */
    async update(userId: string, change: SettingsChange): Promise<SettingsView> {
      const problems = settingProblems(change.settings);
      if (problems.length > 0) throw new InvalidSettingsError(problems);
      return deps.db.withoutTenant((tx) => apply(tx, userId, change));
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
