import { randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { parse, stringify } from 'yaml';
import type { SecretAccess } from './indexer-pki.ts';

/**
 * Who may log in to the tenant's Wazuh indexer (docs/charts-tenant.md "Indexer users"): the
 * OpenSearch security plugin's `internal_users.yml`, `roles.yml` and `roles_mapping.yml`, written
 * by svc as the Secret the monitor subchart mounts over the image's demo configuration. The
 * adapter gets its own user, allowed to read and search the alert indices and nothing else.
 */

/** The adapter's indexer login, mounted into the adapter as two files. */
export const ADAPTER_INDEXER_SECRET = {
  name: 'svc-adapter-indexer',
  purpose: 'adapter-indexer',
  username: 'svc-adapter',
  keys: { username: 'username', password: 'password' },
} as const;

/** The security plugin's configuration files (monitor subchart: opensearch-security/). */
export const INDEXER_SECURITY_SECRET = {
  name: 'svc-indexer-security',
  purpose: 'indexer-security',
  keys: {
    users: 'internal_users.yml',
    roles: 'roles.yml',
    mapping: 'roles_mapping.yml',
  },
} as const;

export const ADAPTER_INDEXER_ROLE = 'svc_adapter_read';
/** The index pattern the adapter searches (the chart's SVC_INDEXER_INDEX). */
export const ALERT_INDEX_PATTERN = 'wazuh-alerts-*';
/** The security plugin's own tool (hash.sh) hashes with cost 12. */
const BCRYPT_COST = 12;

export interface IndexerPasswords {
  /** `monitor-bootstrap-password`: the indexer's admin, as the manager and dashboard log in. */
  admin: string;
  adapter: string;
}

const yaml = (doc: unknown) => stringify(doc, { lineWidth: 0 });

const ROLES_YML = yaml({
  _meta: { type: 'roles', config_version: 2 },
  [ADAPTER_INDEXER_ROLE]: {
    reserved: true,
    description: 'Reads and searches the Wazuh alert indices; nothing else',
    cluster_permissions: [],
    index_permissions: [
      { index_patterns: [ALERT_INDEX_PATTERN], allowed_actions: ['read', 'search'] },
    ],
  },
});

const ROLES_MAPPING_YML = yaml({
  _meta: { type: 'rolesmapping', config_version: 2 },
  all_access: { reserved: false, backend_roles: ['admin'], description: 'admin' },
  kibana_server: { reserved: true, users: ['kibanaserver'] },
  [ADAPTER_INDEXER_ROLE]: { reserved: true, users: [ADAPTER_INDEXER_SECRET.username] },
});

/**
 * The three files for these passwords: fresh bcrypt hashes (a new salt every call). bcryptjs's
 * async form yields between rounds, so the orchestrator's loop is not blocked for the ~250 ms
 * a cost-12 hash takes.
 */
export async function renderSecurityConfig(
  passwords: IndexerPasswords,
): Promise<Record<string, string>> {
  const [admin, adapter] = await Promise.all([
    bcrypt.hash(passwords.admin, BCRYPT_COST),
    bcrypt.hash(passwords.adapter, BCRYPT_COST),
  ]);
  const k = INDEXER_SECURITY_SECRET.keys;
  return {
    [k.users]: yaml({
      _meta: { type: 'internalusers', config_version: 2 },
      admin: {
        hash: admin,
        reserved: true,
        backend_roles: ['admin'],
        description: 'Indexer admin: the manager (filebeat) and the dashboard (svc-bootstrap)',
      },
      // The dashboard server's own login; same Secret key as admin, never the demo password.
      kibanaserver: {
        hash: admin,
        reserved: true,
        description: 'Dashboard server (svc-bootstrap)',
      },
      [ADAPTER_INDEXER_SECRET.username]: {
        hash: adapter,
        reserved: true,
        description: `svc adapter: ${ADAPTER_INDEXER_ROLE} only (${ADAPTER_INDEXER_SECRET.name})`,
      },
    }),
    [k.roles]: ROLES_YML,
    [k.mapping]: ROLES_MAPPING_YML,
  };
}

/** True when `files` is the configuration of exactly these passwords (hashes verified). */
export async function securityConfigMatches(
  files: Record<string, string> | undefined,
  passwords: IndexerPasswords,
): Promise<boolean> {
  if (!files) return false;
  const k = INDEXER_SECURITY_SECRET.keys;
  try {
    if (files[k.roles] !== ROLES_YML || files[k.mapping] !== ROLES_MAPPING_YML) return false;
    const users = parse(files[k.users] ?? '') as Record<string, { hash?: unknown }>;
    const check = async (user: string, password: string) => {
      const stored = users[user]?.hash;
      return typeof stored === 'string' && (await bcrypt.compare(password, stored));
    };
    if (Object.keys(users).length !== 4) return false;
    const checks = await Promise.all([
      check('admin', passwords.admin),
      check('kibanaserver', passwords.admin),
      check(ADAPTER_INDEXER_SECRET.username, passwords.adapter),
    ]);
    return checks.every(Boolean);
  } catch {
    return false;
  }
}

/**
 * Writes `svc-adapter-indexer` (kept when it holds a password: the indexer's security index
 * already has its hash) and `svc-indexer-security` for the current passwords (kept when its
 * hashes still verify, so a retry does not churn the Secret).
 */
export async function ensureIndexerUsers(
  secrets: SecretAccess,
  namespace: string,
  adminPassword: string,
  labels: Record<string, string>,
): Promise<void> {
  const a = ADAPTER_INDEXER_SECRET;
  const stored = await secrets.readSecret(namespace, a.name);
  let adapter = stored?.[a.keys.password];
  if (!adapter || stored?.[a.keys.username] !== a.username) {
    adapter = adapter || randomBytes(24).toString('base64url');
    await secrets.putSecret(
      namespace,
      a.name,
      { [a.keys.username]: a.username, [a.keys.password]: adapter },
      labels,
    );
  }
  const passwords = { admin: adminPassword, adapter };
  const current = await secrets.readSecret(namespace, INDEXER_SECURITY_SECRET.name);
  if (await securityConfigMatches(current, passwords)) return;
  await secrets.putSecret(
    namespace,
    INDEXER_SECURITY_SECRET.name,
    await renderSecurityConfig(passwords),
    labels,
  );
}
