import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, KeyObject, randomUUID } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import {
  createTokenService,
  loadOrCreateSigningKey,
  SIGNING_KEY_FILE,
  signingKeyFromPem,
  TokenKeyError,
} from '../../src/tokens/index.ts';
import { freshPem, rejectsWith } from './forge.ts';

const roots: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-tokens-'));
  roots.push(dir);
  return dir;
}
after(async () => {
  await Promise.all(roots.map((dir) => rm(dir, { recursive: true, force: true })));
});

const now = () => new Date();

test('§5.2 the generated key survives a restart: tokens minted before verify after', async () => {
  const dataDir = path.join(await tempDir(), 'nested', 'data');
  const before = createTokenService({ key: await loadOrCreateSigningKey(dataDir), now });
  const minted = await Promise.all([
    before.mintImpersonation({ userId: randomUUID(), role: 'analyst', tenantId: randomUUID() }),
    before.mintAdapter({ tenantId: randomUUID() }),
  ]);
  const pem = await readFile(path.join(dataDir, SIGNING_KEY_FILE), 'utf8');

  const restartedKey = await loadOrCreateSigningKey(dataDir);
  const after = createTokenService({ key: restartedKey, now });
  const [impersonation, adapter] = minted;
  assert.ok(impersonation && adapter);
  assert.deepEqual(
    await after.verify(impersonation.token, { expect: 'mssp' }),
    impersonation.claims,
  );
  assert.deepEqual(await after.verify(adapter.token, { expect: 'adapter' }), adapter.claims);
  assert.equal(await readFile(path.join(dataDir, SIGNING_KEY_FILE), 'utf8'), pem);
  assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);
});

test('§5.2 the key file is mode 0600 and its new data dir 0700', async () => {
  const dataDir = path.join(await tempDir(), 'data');
  await loadOrCreateSigningKey(dataDir);
  assert.equal((await stat(path.join(dataDir, SIGNING_KEY_FILE))).mode & 0o777, 0o600);
  assert.equal((await stat(dataDir)).mode & 0o777, 0o700);
});

test('§5.2 another data dir is another key: its tokens are refused here', async () => {
  const ours = createTokenService({ key: await loadOrCreateSigningKey(await tempDir()), now });
  const theirs = createTokenService({ key: await loadOrCreateSigningKey(await tempDir()), now });
  const { token } = await theirs.mintMsspUser({ userId: randomUUID(), role: 'platform_admin' });
  await rejectsWith(ours.verify(token, { expect: 'mssp' }), 'unknown_key');
});

test('§5.2 processes starting together on one data dir agree on a single key', async () => {
  const dataDir = await tempDir();
  const keys = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateSigningKey(dataDir)));
  assert.equal(new Set(keys.map((key) => key.kid)).size, 1);
  assert.deepEqual(await readdir(dataDir), [SIGNING_KEY_FILE]);
});

test('§5.2 a key file readable by other users is refused; group bits are tolerated', async () => {
  const dataDir = await tempDir();
  const { kid } = await loadOrCreateSigningKey(dataDir);
  const file = path.join(dataDir, SIGNING_KEY_FILE);
  await chmod(file, 0o644);
  await assert.rejects(loadOrCreateSigningKey(dataDir), (error: unknown) => {
    assert.ok(error instanceof TokenKeyError);
    assert.match(error.message, /mode 644/);
    return true;
  });
  // Kubernetes adds g+rw to volume files for a pod's fsGroup; that must not stop a restart.
  await chmod(file, 0o660);
  assert.equal((await loadOrCreateSigningKey(dataDir)).kid, kid);
});

test('§5.2 a corrupt key file fails loudly and is not replaced', async () => {
  const dataDir = await tempDir();
  const file = path.join(dataDir, SIGNING_KEY_FILE);
  await writeFile(file, 'not a key', { mode: 0o600 });
  await assert.rejects(loadOrCreateSigningKey(dataDir), TokenKeyError);
  assert.equal(await readFile(file, 'utf8'), 'not a key');
});

test('§5.2 an operator-supplied Ed25519 PEM signs; kid is its RFC 7638 thumbprint', async () => {
  const pem = freshPem();
  const first = await signingKeyFromPem(pem);
  const second = await signingKeyFromPem(pem);
  const jwk = KeyObject.from(first.publicKey).export({ format: 'jwk' });
  // RFC 7638 §3.2: required members only, lexicographic order, no whitespace, SHA-256.
  const canonical = `{"crv":"Ed25519","kty":"OKP","x":"${jwk.x}"}`;
  assert.equal(first.kid, createHash('sha256').update(canonical).digest('base64url'));
  assert.equal(second.kid, first.kid);
  const minted = await createTokenService({ key: first, now }).mintAdapter({
    tenantId: randomUUID(),
  });
  await createTokenService({ key: second, now }).verify(minted.token, { expect: 'adapter' });
});

test('§5.2 operator keys that are not unencrypted Ed25519 private keys are refused', async () => {
  const ed = generateKeyPairSync('ed25519');
  const cases: [string, string | Buffer][] = [
    ['garbage', 'hello'],
    [
      'RSA',
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
        type: 'pkcs8',
        format: 'pem',
      }),
    ],
    [
      'P-256',
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
        type: 'pkcs8',
        format: 'pem',
      }),
    ],
    ['Ed448', generateKeyPairSync('ed448').privateKey.export({ type: 'pkcs8', format: 'pem' })],
    ['public key', ed.publicKey.export({ type: 'spki', format: 'pem' })],
    [
      'encrypted',
      ed.privateKey.export({
        type: 'pkcs8',
        format: 'pem',
        cipher: 'aes-256-cbc',
        passphrase: 'secret',
      }),
    ],
  ];
  for (const [label, pem] of cases) {
    await assert.rejects(
      signingKeyFromPem(pem.toString(), 'SVC_TOKEN_SIGNING_KEY'),
      (error: unknown) => {
        assert.ok(error instanceof TokenKeyError, label);
        assert.match(error.message, /^SVC_TOKEN_SIGNING_KEY /, label);
        assert.ok(!error.message.includes('BEGIN'), `${label}: message must not echo the key`);
        return true;
      },
      label,
    );
  }
});
