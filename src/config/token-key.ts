import Type from 'typebox';
import { ConfigError, type Env, settingReader } from './env.ts';

/** Ed25519 key that signs svc's JWTs; generated under the data dir when not supplied. */
export type TokenKeyConfig =
  | { kind: 'generated' }
  | { kind: 'pem'; pem: string }
  | { kind: 'file'; path: string };

export const TOKEN_KEY_SETTINGS = {
  SVC_TOKEN_SIGNING_KEY: {
    schema: Type.String({ pattern: '^-----BEGIN PRIVATE KEY-----' }),
    expected: 'a PKCS8 PEM Ed25519 private key',
  },
  SVC_TOKEN_SIGNING_KEY_FILE: { schema: Type.String({ minLength: 1 }), expected: 'a file path' },
} as const;

const read = settingReader(TOKEN_KEY_SETTINGS);

export function readTokenKey(env: Env): TokenKeyConfig {
  const pem = read(env, 'SVC_TOKEN_SIGNING_KEY');
  const file = read(env, 'SVC_TOKEN_SIGNING_KEY_FILE');
  if (pem !== undefined && file !== undefined) {
    throw new ConfigError(
      'SVC_TOKEN_SIGNING_KEY_FILE: expected only one of SVC_TOKEN_SIGNING_KEY and SVC_TOKEN_SIGNING_KEY_FILE',
    );
  }
  // A PEM passed through a single-line env var arrives with literal \n.
  if (pem !== undefined) return { kind: 'pem', pem: pem.replaceAll('\\n', '\n') };
  if (file !== undefined) return { kind: 'file', path: file };
  return { kind: 'generated' };
}
