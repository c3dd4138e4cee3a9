import type { Static } from 'typebox';
import type * as s from 'zapatos/schema';
import type { InstallSettingsView } from '../../../contracts/install-settings.ts';

export type SettingsView = Static<typeof InstallSettingsView>;

/** A row of install_settings; `value` is whatever JSON the key holds. */
export type StoredSetting = Pick<
  s.install_settings.Selectable,
  'key' | 'updated_at' | 'updated_by'
> & {
  value: unknown;
};

/** One refused key of a change: a JSON pointer into the request body and why. */
export interface SettingProblem {
  path: string;
  message: string;
}

/** A key outside the closed set, or a value its schema refuses; nothing is written. */
export class InvalidSettingsError extends Error {
  override name = 'InvalidSettingsError';
  constructor(readonly problems: SettingProblem[]) {
    super('The settings cannot be applied');
  }
}

/** `expected_updated_at` is not the settings' newest change: someone changed them since. */
export class SettingsChangedError extends Error {
  override name = 'SettingsChangedError';
  constructor(readonly current: string | null) {
    super('The settings changed since they were read');
  }
}
