import type { TenantConfig } from '../../../contracts/tenant-config.ts';

/**
 * The secret parts of a tenant configuration: the database keeps the configuration without
 * them (a flag says each exists), and each integration credential gets one key in the Secret
 * `tenant-<id>-integrations`.
 */
export function withoutSecrets(config: TenantConfig): Record<string, unknown> {
  const { llm, integrations, ...rest } = config;
  return {
    ...rest,
    ...(llm
      ? {
          llm: {
            provider: llm.provider,
            base_url: llm.base_url,
            model: llm.model,
            has_api_key: llm.api_key !== undefined,
          },
        }
      : {}),
    ...(integrations
      ? {
          integrations: {
            ...integrations,
            items: integrations.items?.map(({ credential, ...item }) => ({
              ...item,
              has_credential: credential !== undefined,
            })),
          },
        }
      : {}),
  };
}

/**
 * `<kind>.<name>` with every character a Secret key may not hold replaced by `_`. Distinct
 * names can meet on one key (`a b`, `a/b`); validate-config.ts refuses such pairs.
 */
export function integrationSecretKey(kind: string, name: string): string {
  return `${kind}.${name}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** The integrations Secret's data: one key per credential. */
export function integrationCredentials(config: TenantConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of config.integrations?.items ?? []) {
    if (item.credential === undefined) continue;
    out[integrationSecretKey(item.kind, item.name)] = item.credential;
  }
  return out;
}
