import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Credential, DatabaseCredentials, DatabaseRole } from '../config/index.ts';

/**
 * The role names spec §5.7 fixes, plus svc_audit: the read-only role `svc psql` opens
 * (docs/auditing.md explains the addition). Policies and grants in sql/ name them.
 */
export const ROLE_NAMES: Record<DatabaseRole, string> = {
  admin: 'svc_admin',
  app: 'svc_app',
  mssp: 'svc_mssp',
  audit: 'svc_audit',
};

export function generatePassword(): string {
  return randomBytes(24).toString('base64url');
}

const generated = (role: DatabaseRole): Credential => ({
  user: ROLE_NAMES[role],
  password: generatePassword(),
});

/**
 * Credentials svc generated for itself (embedded database, or a bootstrap URL without
 * explicit credentials), kept beside the data so a restart logs in with the same ones.
 * A file written before svc_audit existed gains that role's credential on the next start.
 */
export async function loadOrCreateCredentials(
  dataDir: string,
): Promise<Required<DatabaseCredentials>> {
  const file = path.join(dataDir, 'credentials.json');
  let stored: DatabaseCredentials | undefined;
  try {
    stored = JSON.parse(await readFile(file, 'utf8')) as DatabaseCredentials;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (stored?.audit) return stored as Required<DatabaseCredentials>;
  const credentials: Required<DatabaseCredentials> = stored
    ? { ...stored, audit: generated('audit') }
    : {
        admin: generated('admin'),
        app: generated('app'),
        mssp: generated('mssp'),
        audit: generated('audit'),
      };
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  return credentials;
}
