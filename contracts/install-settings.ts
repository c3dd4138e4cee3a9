import Type, { type Static } from 'typebox';
import { Timestamp } from './timestamp.ts';

/**
 * Install settings (spec §2.2, §2.4): a closed, typed set of keys, each with a documented
 * default that applies while no one has set it. Only keys svc reads belong here; a key added
 * here needs a reader, a default and a line in docs/operations.md.
 */
export const INSTALL_SETTINGS = {
  /** Spec §8: audit rows are kept 90 days; the retention purge reads this. */
  'audit.retention_days': Type.Integer({
    minimum: 1,
    maximum: 3650,
    description: 'Days an audit row is kept before the retention purge deletes it (default 90)',
  }),
} as const;

export type InstallSettingKey = keyof typeof INSTALL_SETTINGS;

/** The effective value of every key, as svc uses it. */
export type InstallSettingValues = {
  [K in InstallSettingKey]: Static<(typeof INSTALL_SETTINGS)[K]>;
};

export const INSTALL_SETTING_DEFAULTS: InstallSettingValues = {
  'audit.retention_days': 90,
};

/** One key as GET shows it: its effective value, its default, and who last set it. */
function settingView<S extends (typeof INSTALL_SETTINGS)[InstallSettingKey]>(schema: S) {
  return Type.Object(
    {
      value: schema,
      default: schema,
      /** No one has set it: `value` is the default, and a change of the default reaches it. */
      is_default: Type.Boolean(),
      updated_at: Type.Union([Timestamp, Type.Null()]),
      /** The user id of whoever set it last. */
      updated_by: Type.Union([Type.String(), Type.Null()]),
    },
    { additionalProperties: false },
  );
}

export const InstallSettingsView = Type.Object(
  {
    settings: Type.Object(
      { 'audit.retention_days': settingView(INSTALL_SETTINGS['audit.retention_days']) },
      { additionalProperties: false },
    ),
    /**
     * The newest change of any key (null: all defaults). A PUT that sends it back as
     * `expected_updated_at` is refused with 409 if someone changed the settings since.
     */
    updated_at: Type.Union([Timestamp, Type.Null()]),
  },
  { additionalProperties: false },
);

/** A key's new value, or null to return it to its default. */
const change = <S extends (typeof INSTALL_SETTINGS)[InstallSettingKey]>(schema: S) =>
  Type.Optional(Type.Union([schema, Type.Null()]));

/**
 * A partial update: the keys given are set (null: back to the default), the others keep their
 * value. An unknown key or a value its schema refuses is 422 `invalid_settings`, naming each key.
 */
export const InstallSettingsUpdate = Type.Object(
  {
    settings: Type.Object(
      { 'audit.retention_days': change(INSTALL_SETTINGS['audit.retention_days']) },
      { additionalProperties: false, minProperties: 1 },
    ),
    expected_updated_at: Type.Optional(Type.Union([Timestamp, Type.Null()])),
  },
  { additionalProperties: false },
);
