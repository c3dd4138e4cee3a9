import type { StaticDecode } from 'typebox';
import type * as s from 'zapatos/schema';
import type { InstallSettingsView } from '../../../contracts/install-settings.ts';
import type { Narrowed } from '../../db/rows.ts';
import { DomainError } from '../domain-error.ts';

/** Decoded: `updated_at` is a Date, written as the contract's text by the HTTP layer. */
export type SettingsView = StaticDecode<typeof InstallSettingsView>;

/** A row of install_settings; `value` is whatever JSON the key holds. */
export type StoredSetting = Narrowed<
  Pick<s.install_settings.Selectable, 'key' | 'value' | 'updated_at' | 'updated_by'>,
  { value: unknown }
>;

/** One refused key of a change: a JSON pointer into the request body and why. */
export interface SettingProblem {
  path: string;
  message: string;
}

/** A key outside the closed set, or a value its schema refuses; nothing is written. */
export class InvalidSettingsError extends DomainError {
  override name = 'InvalidSettingsError';
  readonly code = 'invalid_settings';
  constructor(readonly problems: SettingProblem[]) {
    super('The settings cannot be applied');
  }
}

/** `expected_updated_at` is not the settings' newest change: someone changed them since. */
export class SettingsChangedError extends DomainError {
  override name = 'SettingsChangedError';
  readonly code = 'settings_changed';
  constructor(readonly current: Date | null) {
    super('The settings changed since they were read');
  }
}
