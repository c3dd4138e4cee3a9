import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Credential, DatabaseRole } from '../config/index.ts';

/** The role names spec §5.7 fixes; policies and grants in sql/ name them. */
export const ROLE_NAMES: Record<DatabaseRole, string> = {
  admin: 'svc_admin',
  app: 'svc_app',
  mssp: 'svc_mssp',
};

export function generatePassword(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * Credentials svc generated for itself (embedded database, or a bootstrap URL without
 * explicit credentials), kept beside the data so a restart logs in with the same ones.
 */
export async function loadOrCreateCredentials(
  dataDir: string,
): Promise<Record<DatabaseRole, Credential>> {
  const file = path.join(dataDir, 'credentials.json');
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<DatabaseRole, Credential>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const credentials: Record<DatabaseRole, Credential> = {
    admin: { user: ROLE_NAMES.admin, password: generatePassword() },
    app: { user: ROLE_NAMES.app, password: generatePassword() },
    mssp: { user: ROLE_NAMES.mssp, password: generatePassword() },
  };
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  return credentials;
}
