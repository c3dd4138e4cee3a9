import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { BackupError } from './pg-tools.ts';

/**
 * What `svc db restore` checks before it touches a database (docs/operations.md "Backup and
 * restore"): whose install the archive is, which schema it holds, and that its bytes are the
 * ones backed up. It lives beside the archive (`<archive>.manifest.json`) so the archive stays a
 * plain pg_dump custom-format file that pg_restore reads by hand.
 */
export const BackupManifest = Type.Object(
  {
    format: Type.Literal('svc-backup/1'),
    svcVersion: Type.String({ minLength: 1 }),
    /** The highest applied migration (sql/NNNN_*.sql) in the archive. */
    schemaVersion: Type.Integer({ minimum: 1 }),
    installId: Type.String({ format: 'uuid' }),
    createdAt: Type.String({ format: 'date-time' }),
    archive: Type.Object(
      {
        file: Type.String({ minLength: 1 }),
        bytes: Type.Integer({ minimum: 0 }),
        sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
      },
      { additionalProperties: false },
    ),
    postgres: Type.Object(
      { serverVersion: Type.String(), pgDumpMajor: Type.Integer() },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type BackupManifest = Static<typeof BackupManifest>;

const checkManifest = Compile(BackupManifest);

export function manifestPath(archive: string): string {
  return `${archive}.manifest.json`;
}

export async function sha256File(file: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

export async function readManifest(archive: string): Promise<BackupManifest> {
  const file = manifestPath(archive);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new BackupError(
      `no manifest ${file}: svc db backup writes it beside the archive, and restore needs it to check the archive`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new BackupError(`${file} is not JSON`);
  }
  if (!checkManifest.Check(parsed)) {
    const first = [...checkManifest.Errors(parsed)][0];
    throw new BackupError(
      `${file} is not an svc backup manifest (${first?.instancePath || '/'}: ${first?.message ?? 'invalid'})`,
    );
  }
  return parsed;
}

/** The archive is the one the manifest describes, byte for byte. */
export async function verifyArchive(archive: string, manifest: BackupManifest): Promise<void> {
  let actual: { sha256: string; bytes: number };
  try {
    actual = await sha256File(archive);
  } catch {
    throw new BackupError(`cannot read the archive ${archive}`);
  }
  if (actual.sha256 !== manifest.archive.sha256 || actual.bytes !== manifest.archive.bytes) {
    throw new BackupError(
      `${archive}: checksum mismatch (sha256 ${actual.sha256}, ${actual.bytes} bytes; the manifest says ${manifest.archive.sha256}, ${manifest.archive.bytes} bytes): the archive is damaged or not the one backed up`,
    );
  }
}
