import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ConfigError, type InstallConfig } from '../config/index.ts';
import { clientConfig, type DatabaseTarget } from '../db/target.ts';
import {
  installRecord,
  type OrganizationRow,
} from '../domains/provisioning/provisioning-service.ts';

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
    const row = await installRecord.ensure(client, {
      mssp_id: config.msspId ?? randomUUID(),
      mssp_name: config.msspName,
      install_id: config.installId ?? randomUUID(),
      install_label: config.installLabel,
    });
    if (!row) throw new Error('organization row missing after insert');
    assertSameInstall(config, row);
    if (row.mssp_name !== config.msspName || row.install_label !== config.installLabel) {
      await installRecord.rename(client, {
        mssp_name: config.msspName,
        install_label: config.installLabel,
      });
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

function assertSameInstall(config: InstallConfig, row: OrganizationRow): void {
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
}
