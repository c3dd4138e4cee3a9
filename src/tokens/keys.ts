import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  type webcrypto,
} from 'node:crypto';
import { link, mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { calculateJwkThumbprint } from 'jose';

/** The file under the data dir that holds the generated key (PKCS8 PEM, mode 0600). */
export const SIGNING_KEY_FILE = 'token-signing-key.pem';

/** An Ed25519 key pair ready for jose, and its RFC 7638 thumbprint used as the JWT `kid`. */
export interface SigningKey {
  readonly kid: string;
  readonly privateKey: webcrypto.CryptoKey;
  readonly publicKey: webcrypto.CryptoKey;
}

/** Raised for a key that is missing, unreadable, exposed or not Ed25519; never echoes the key. */
export class TokenKeyError extends Error {
  override name = 'TokenKeyError';
}

/**
 * Parses an operator-supplied PKCS8 PEM private key. Only Ed25519 is accepted, so a key of
 * another type fails at start instead of minting tokens verify would refuse.
 */
export async function signingKeyFromPem(
  pem: string,
  source = 'the token signing key',
): Promise<SigningKey> {
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new TokenKeyError(`${source} is not a readable unencrypted PEM private key`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new TokenKeyError(
      `${source} is a ${privateKey.asymmetricKeyType ?? 'unknown'} key; an Ed25519 key is required`,
    );
  }
  const publicKey = createPublicKey(privateKey);
  // Non-extractable: nothing past this point can leak the private half by exporting it.
  const signing = privateKey.toCryptoKey('Ed25519', false, ['sign']);
  const verifying = publicKey.toCryptoKey('Ed25519', true, ['verify']);
  return {
    kid: await calculateJwkThumbprint(publicKey.export({ format: 'jwk' }), 'sha256'),
    privateKey: signing,
    publicKey: verifying,
  };
}

/**
 * Returns the key kept in `<dataDir>/token-signing-key.pem`, generating it on first use so a
 * restart keeps issued tokens valid. Safe when several processes (serve, worker) start at once
 * on one data dir: the file appears atomically and the first writer wins.
 */
export async function loadOrCreateSigningKey(dataDir: string): Promise<SigningKey> {
  const file = path.join(dataDir, SIGNING_KEY_FILE);
  const existing = await readKeyFile(file);
  if (existing !== undefined) return signingKeyFromPem(existing, file);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const { privateKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  const temporary = `${file}.${randomUUID()}.tmp`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(pem);
    // Flushed before it becomes visible, so a crash cannot leave an empty key behind.
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(temporary);
  }
  const stored = await readKeyFile(file);
  if (stored === undefined) throw new TokenKeyError(`${file} vanished while it was created`);
  return signingKeyFromPem(stored, file);
}

async function readKeyFile(file: string): Promise<string | undefined> {
  let mode: number;
  try {
    const info = await stat(file);
    if (!info.isFile()) throw new TokenKeyError(`${file} is not a regular file`);
    mode = info.mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  // Group bits are tolerated: Kubernetes adds g+rw to volume files when a pod sets fsGroup.
  if ((mode & 0o007) !== 0) {
    throw new TokenKeyError(
      `${file} is accessible to other users (mode ${(mode & 0o777).toString(8)}); chmod 600 it`,
    );
  }
  return readFile(file, 'utf8');
}
