import assert from 'node:assert/strict';
import { KeyObject, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { generateKeyPair, SignJWT } from 'jose';
import { CLOCK_TOLERANCE_SECONDS, TOKEN_KINDS, type TokenKind } from '../../src/tokens/index.ts';
import {
  claimsOf,
  encode,
  freshKey,
  harness,
  ourHeader,
  rejectsWith,
  signEd,
  signHs256,
  T0,
} from './forge.ts';

test('§5.2 alg none is refused, in any spelling, with or without a signature', async () => {
  const { tokens, key } = await harness();
  const payload = claimsOf('mssp');
  for (const alg of ['none', 'None', 'NONE', 'nOnE', '', null]) {
    const header = { ...ourHeader(key), alg };
    const unsigned = `${encode(header)}.${encode(payload)}.`;
    await rejectsWith(tokens.verify(unsigned, { expect: 'mssp' }), 'wrong_algorithm', `${alg}`);
    const withSig = `${unsigned}${Buffer.from('x').toString('base64url')}`;
    await rejectsWith(tokens.verify(withSig, { expect: 'mssp' }), 'wrong_algorithm', `${alg}+sig`);
  }
  const noAlg = `${encode({ kid: key.kid, typ: 'JWT' })}.${encode(payload)}.`;
  await rejectsWith(tokens.verify(noAlg, { expect: 'mssp' }), 'wrong_algorithm', 'no alg');
});

test('§5.2 HS256 signed with our public key as the HMAC secret is refused', async () => {
  const { tokens, key } = await harness();
  const publicKey = KeyObject.from(key.publicKey);
  const jwk = publicKey.export({ format: 'jwk' });
  const secrets: [string, Uint8Array | string][] = [
    ['SPKI PEM', publicKey.export({ type: 'spki', format: 'pem' })],
    ['SPKI DER', publicKey.export({ type: 'spki', format: 'der' })],
    ['raw 32 bytes', Buffer.from(jwk.x ?? '', 'base64url')],
    ['JWK x string', jwk.x ?? ''],
    ['JWK JSON', JSON.stringify(jwk)],
    ['kid', key.kid],
  ];
  assert.equal(Buffer.from(jwk.x ?? '', 'base64url').length, 32);
  for (const [label, secret] of secrets) {
    for (const alg of ['HS256', 'HS384', 'HS512']) {
      const forged = signHs256(secret, { ...ourHeader(key), alg }, claimsOf('mssp'));
      await rejectsWith(tokens.verify(forged, { expect: 'mssp' }), 'wrong_algorithm', label);
    }
  }
});

test('§5.2 RS256, ES256, PS256 and the fully-specified Ed25519 alg are refused', async () => {
  const { tokens, key } = await harness();
  for (const alg of ['RS256', 'ES256', 'PS256']) {
    const pair = await generateKeyPair(alg);
    const forged = await new SignJWT(claimsOf('worker'))
      .setProtectedHeader({ ...ourHeader(key), alg })
      .sign(pair.privateKey);
    await rejectsWith(tokens.verify(forged, { expect: 'worker' }), 'wrong_algorithm', alg);
  }
  // Genuinely signed by our key, but only the alg svc writes is accepted.
  const relabelled = await signEd(
    key.privateKey,
    { ...ourHeader(key), alg: 'Ed25519' },
    claimsOf('worker'),
  );
  await rejectsWith(tokens.verify(relabelled, { expect: 'worker' }), 'wrong_algorithm', 'Ed25519');
});

test('§5.2 a token signed by another Ed25519 key is refused, even with our kid', async () => {
  const { tokens, key } = await harness();
  const attacker = await freshKey();
  const sameKid = await signEd(attacker.privateKey, ourHeader(key), claimsOf('mssp'));
  await rejectsWith(tokens.verify(sameKid, { expect: 'mssp' }), 'bad_signature');
  const ownKid = await signEd(attacker.privateKey, ourHeader(attacker), claimsOf('mssp'));
  await rejectsWith(tokens.verify(ownKid, { expect: 'mssp' }), 'unknown_key');
  const noKid = await signEd(key.privateKey, { alg: 'EdDSA', typ: 'JWT' }, claimsOf('mssp'));
  await rejectsWith(tokens.verify(noKid, { expect: 'mssp' }), 'unknown_key', 'no kid');
  // A token another svc install minted with its own service is refused the same way.
  const other = await harness();
  const minted = await other.tokens.mintMsspUser({ userId: randomUUID(), role: 'platform_admin' });
  await rejectsWith(tokens.verify(minted.token, { expect: 'mssp' }), 'unknown_key', 'other svc');
});

test('§5.2 tampered payload with the original signature is refused', async () => {
  const { tokens } = await harness();
  const { token } = await tokens.mintImpersonation({
    userId: randomUUID(),
    role: 'analyst',
    tenantId: randomUUID(),
  });
  const [header, payload, signature] = token.split('.');
  const original = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as object;
  const flips: Record<string, unknown>[] = [
    { role: 'platform_admin' },
    { current_tenant: randomUUID() },
    { current_tenant: null },
    { exp: T0 + 10 * 365 * 24 * 3600 },
    { user_type: 'tenant' },
  ];
  for (const flip of flips) {
    const forged = `${header}.${encode({ ...original, ...flip })}.${signature}`;
    await rejectsWith(
      tokens.verify(forged, { expect: 'mssp' }),
      'bad_signature',
      Object.keys(flip)[0],
    );
  }
  // Signature bytes flipped, payload intact.
  const sig = Buffer.from(signature ?? '', 'base64url');
  sig[0] = (sig[0] ?? 0) ^ 1;
  const flipped = `${header}.${payload}.${sig.toString('base64url')}`;
  await rejectsWith(tokens.verify(flipped, { expect: 'mssp' }), 'bad_signature', 'signature bit');
  await rejectsWith(tokens.verify(`${header}.${payload}.`, { expect: 'mssp' }), 'bad_signature');
});

test('§5.2 issuer must be exactly svc', async () => {
  const { tokens, key } = await harness();
  for (const iss of ['SVC', 'svc ', 'https://svc', 'svc-system', '', 42, null, ['svc']]) {
    const forged = await signEd(key.privateKey, ourHeader(key), { ...claimsOf('tenant'), iss });
    await rejectsWith(tokens.verify(forged, { expect: 'tenant' }), 'wrong_issuer', String(iss));
  }
  const { iss: _dropped, ...missing } = claimsOf('tenant');
  const forged = await signEd(key.privateKey, ourHeader(key), missing);
  await rejectsWith(tokens.verify(forged, { expect: 'tenant' }), 'wrong_issuer', 'missing');
});

test(`§5.2 expired tokens are refused once the ${CLOCK_TOLERANCE_SECONDS} s tolerance is spent`, async () => {
  const { tokens, at } = await harness();
  const user = await tokens.mintMsspUser({ userId: randomUUID(), role: 'analyst' });
  at(900 + CLOCK_TOLERANCE_SECONDS - 1);
  await tokens.verify(user.token, { expect: 'mssp' });
  at(900 + CLOCK_TOLERANCE_SECONDS);
  await rejectsWith(tokens.verify(user.token, { expect: 'mssp' }), 'expired');
  at(0);
  const imp = await tokens.mintImpersonation({
    userId: randomUUID(),
    role: 'analyst',
    tenantId: randomUUID(),
    ttlSeconds: 1800,
  });
  at(1800 + CLOCK_TOLERANCE_SECONDS);
  await rejectsWith(tokens.verify(imp.token, { expect: 'mssp' }), 'expired', 'impersonation');
  at(0);
  const worker = await tokens.mintWorker({
    tenantId: randomUUID(),
    jobId: randomUUID(),
    jobType: 'triage',
  });
  at(600 + CLOCK_TOLERANCE_SECONDS);
  await rejectsWith(tokens.verify(worker.token, { expect: 'worker' }), 'expired', 'worker');
});

test('§5.2 a token issued in the future (iat ahead of the clock) is refused', async () => {
  const { tokens, at } = await harness();
  at(CLOCK_TOLERANCE_SECONDS);
  const withinSkew = await tokens.mintTenantUser({ userId: randomUUID(), tenantId: randomUUID() });
  at(CLOCK_TOLERANCE_SECONDS + 1);
  const ahead = await tokens.mintTenantUser({ userId: randomUUID(), tenantId: randomUUID() });
  at(24 * 3600);
  const farAhead = await tokens.mintTenantUser({ userId: randomUUID(), tenantId: randomUUID() });
  at(0);
  await tokens.verify(withinSkew.token, { expect: 'tenant' });
  await rejectsWith(tokens.verify(ahead.token, { expect: 'tenant' }), 'not_yet_valid');
  await rejectsWith(tokens.verify(farAhead.token, { expect: 'tenant' }), 'not_yet_valid');
});

test('§5.2 user_type must match the API family: the full kind matrix', async () => {
  const { tokens } = await harness();
  const minted: Record<TokenKind, string> = {
    mssp: (await tokens.mintMsspUser({ userId: randomUUID(), role: 'platform_admin' })).token,
    tenant: (await tokens.mintTenantUser({ userId: randomUUID(), tenantId: randomUUID() })).token,
    worker: (
      await tokens.mintWorker({ tenantId: randomUUID(), jobId: randomUUID(), jobType: 'triage' })
    ).token,
    adapter: (await tokens.mintAdapter({ tenantId: randomUUID() })).token,
  };
  let refused = 0;
  for (const presented of TOKEN_KINDS) {
    for (const expect of TOKEN_KINDS) {
      const attempt = tokens.verify(minted[presented], { expect });
      if (presented === expect) {
        assert.equal((await attempt).user_type, expect);
      } else {
        await rejectsWith(attempt, 'wrong_kind', `${presented} token at ${expect}`);
        refused += 1;
      }
    }
  }
  assert.equal(refused, 12);
  const impersonation = await tokens.mintImpersonation({
    userId: randomUUID(),
    role: 'analyst',
    tenantId: randomUUID(),
  });
  await rejectsWith(tokens.verify(impersonation.token, { expect: 'tenant' }), 'wrong_kind');
});

test('§5.2 claim sets are closed: an extra claim is refused even under our signature', async () => {
  const { tokens, key } = await harness();
  // Raw JSON fragments, so that even a "__proto__" member reaches the parser as written.
  const extras: [TokenKind, string][] = [
    ['mssp', `"tenant_id":"${randomUUID()}"`],
    ['mssp', '"aud":"svc"'],
    ['mssp', `"nbf":${T0 - 60}`],
    ['tenant', `"current_tenant":"${randomUUID()}"`],
    ['tenant', '"admin":true'],
    ['worker', '"scope":"adapter"'],
    ['adapter', `"job_id":"${randomUUID()}"`],
    ['adapter', '"__proto__":{"role":"platform_admin"}'],
  ];
  for (const [kind, extra] of extras) {
    const payload = `${JSON.stringify(claimsOf(kind)).slice(0, -1)},${extra}}`;
    const forged = await signEd(key.privateKey, ourHeader(key), payload);
    await rejectsWith(tokens.verify(forged, { expect: kind }), 'bad_claims', extra);
  }
});

test('§5.2 every claim is required: each one removed is refused under our signature', async () => {
  const { tokens, key } = await harness();
  let cases = 0;
  for (const kind of TOKEN_KINDS) {
    const full = claimsOf(kind);
    for (const claim of Object.keys(full)) {
      const { [claim]: _removed, ...rest } = full;
      const forged = await signEd(key.privateKey, ourHeader(key), rest);
      const reason = claim === 'iss' ? 'wrong_issuer' : 'bad_claims';
      await rejectsWith(
        tokens.verify(forged, { expect: kind }),
        reason,
        `${kind} without ${claim}`,
      );
      cases += 1;
    }
  }
  assert.equal(cases, 8 + 8 + 9 + 8);
});

test('§5.2 claim values outside the schema are refused under our signature', async () => {
  const { tokens, key } = await harness();
  const bad: [TokenKind, Record<string, unknown>][] = [
    ['mssp', { role: 'customer_viewer' }],
    ['mssp', { role: 'superuser' }],
    ['mssp', { current_tenant: 'tenant-acme' }],
    ['mssp', { current_tenant: randomUUID().toUpperCase() }],
    ['mssp', { sub: randomUUID() }],
    ['mssp', { sub: 'user_admin' }],
    ['tenant', { role: 'analyst' }],
    ['tenant', { tenant_id: null }],
    ['worker', { sub: 'adapter' }],
    ['worker', { job_type: 'x'.repeat(65) }],
    ['worker', { job_id: 7 }],
    ['adapter', { scope: 'admin' }],
    ['adapter', { sub: 'worker' }],
    ['adapter', { jti: 'not-a-uuid' }],
    ['adapter', { iat: T0 + 0.5 }],
    ['adapter', { exp: String(T0 + 900) }],
  ];
  for (const [kind, change] of bad) {
    const forged = await signEd(key.privateKey, ourHeader(key), { ...claimsOf(kind), ...change });
    await rejectsWith(
      tokens.verify(forged, { expect: kind }),
      'bad_claims',
      JSON.stringify(change),
    );
  }
});

test('§8 a lifetime longer than svc mints is refused under our signature', async () => {
  const { tokens, key } = await harness();
  const cases: [TokenKind, Record<string, unknown>, string][] = [
    ['mssp', { current_tenant: randomUUID(), exp: T0 + 1801 }, 'impersonation 1801 s'],
    ['mssp', { exp: T0 + 901 }, 'mssp user 901 s'],
    ['tenant', { exp: T0 + 901 }, 'tenant user 901 s'],
    ['worker', { exp: T0 + 3601 }, 'worker 3601 s'],
    ['adapter', { exp: T0 + 8 * 24 * 3600 + 1 }, 'adapter 8 d + 1 s'],
    ['adapter', { exp: T0 }, 'exp equal to iat'],
  ];
  for (const [kind, change, label] of cases) {
    const forged = await signEd(key.privateKey, ourHeader(key), { ...claimsOf(kind), ...change });
    await rejectsWith(tokens.verify(forged, { expect: kind }), 'bad_claims', label);
  }
  const longest = { ...claimsOf('mssp'), current_tenant: randomUUID(), exp: T0 + 1800 };
  await tokens.verify(await signEd(key.privateKey, ourHeader(key), longest), { expect: 'mssp' });
});

test('§5.2 header fields svc does not write are refused (no embedded keys, no crit)', async () => {
  const { tokens, key } = await harness();
  const attacker = await freshKey();
  const attackerJwk = KeyObject.from(attacker.publicKey).export({ format: 'jwk' });
  const headers: Record<string, unknown>[] = [
    { jwk: attackerJwk },
    { jku: 'https://evil.example/jwks.json' },
    { x5u: 'https://evil.example/cert.pem' },
    { crit: ['exp'], exp: 1 },
    { b64: false, crit: ['b64'] },
    { typ: 'at+jwt' },
    { typ: undefined },
  ];
  for (const extra of headers) {
    const forged = await signEd(key.privateKey, { ...ourHeader(key), ...extra }, claimsOf('mssp'));
    await rejectsWith(
      tokens.verify(forged, { expect: 'mssp' }),
      'malformed',
      JSON.stringify(extra),
    );
  }
});

test('§5.2 malformed input is refused before any cryptography', async () => {
  const { tokens, key } = await harness();
  const valid = await tokens.mintAdapter({ tenantId: randomUUID() });
  const inputs = [
    '',
    'Bearer x',
    'a.b',
    `${valid.token}.x`,
    `${valid.token} `,
    `{"payload":"x","signature":"y"}`,
    `${encode('not json')}.${encode(claimsOf('adapter'))}.`,
    `${encode([1, 2])}.${encode(claimsOf('adapter'))}.`,
    `${encode(ourHeader(key))}.${'A'.repeat(5000)}.x`,
    undefined as unknown as string,
  ];
  for (const input of inputs) {
    await rejectsWith(
      tokens.verify(input, { expect: 'adapter' }),
      'malformed',
      String(input).slice(0, 40),
    );
  }
  const notAnObject = await signEd(key.privateKey, ourHeader(key), '[1,2,3]');
  await rejectsWith(
    tokens.verify(notAnObject, { expect: 'adapter' }),
    'malformed',
    'array payload',
  );
});
