import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ConfigError, type InstallConfig } from '../config/index.ts';
import { clientConfig, type DatabaseTarget } from '../db/target.ts';

export interface InstallRecord {
  msspId: string;
  msspName: string;
  installId: string;
  installLabel: string;
}

/**
 * Spec §2.9 install.*: the organization row holds the MSSP and install ids every tenant
 * namespace is labelled with (§2.5). The first start writes them (from SVC_MSSP_ID /
 * SVC_INSTALL_ID, or freshly generated for a local install); later starts must agree, because
 * `installId` is stable across upgrades: a changed id would orphan every tenant namespace,
 * which the admission policy would then forbid svc to touch. Runs as svc_admin, like migrate.
 */
export async function ensureInstall(
  target: DatabaseTarget,
  config: InstallConfig,
): Promise<InstallRecord> {
  const client = new pg.Client(clientConfig(target, 'admin'));
  await client.connect();
  try {
    await client.query(
      `INSERT INTO organization (mssp_id, mssp_name, install_id, install_label)
       VALUES ($1, $2, $3, $4) ON CONFLICT (singleton) DO NOTHING`,
      [
        config.msspId ?? randomUUID(),
        config.msspName,
        config.installId ?? randomUUID(),
        config.installLabel,
      ],
    );
    const { rows } = await client.query<{
      mssp_id: string;
      mssp_name: string;
      install_id: string;
      install_label: string;
    }>('SELECT mssp_id, mssp_name, install_id, install_label FROM organization');
    const row = rows[0];
    if (!row) throw new Error('organization row missing after insert');
    for (const [name, given, stored] of [
      ['SVC_MSSP_ID', config.msspId, row.mssp_id],
      ['SVC_INSTALL_ID', config.installId, row.install_id],
    ] as const) {
      if (given !== undefined && given !== stored) {
        throw new ConfigError(
          `${name}: this database belongs to ${stored}; ${given} would orphan every tenant namespace`,
        );
      }
    }
    if (row.mssp_name !== config.msspName || row.install_label !== config.installLabel) {
      await client.query(
        'UPDATE organization SET mssp_name = $1, install_label = $2, updated_at = now()',
        [config.msspName, config.installLabel],
      );
    }
    return {
      msspId: row.mssp_id,
      msspName: config.msspName,
      installId: row.install_id,
      installLabel: config.installLabel,
    };
  } finally {
    await client.end();
  }
}
