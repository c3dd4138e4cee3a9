import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import type { Role } from '../../src/auth/identity.ts';
import type { HashParams } from '../../src/auth/passwords.ts';
import { seedUser, type TestApi } from './api.ts';
import type { TestDatabase } from './database.ts';

/**
 * Argon2id at a small fraction of the production cost, for tests that hash passwords but do
 * not test hashing: `startTestApi(db, { hash: { params: TEST_HASH_PARAMS } })`. Tests of
 * hashing itself (cost, rehash, saturation, timing) keep the default PASSWORD_PARAMS.
 */
export const TEST_HASH_PARAMS: HashParams = {
  memoryCost: 1024,
  timeCost: 1,
  parallelism: 1,
  outputLen: 32,
};

export const TEST_PASSWORD = 'correct horse battery';

export interface SignInOptions {
  /** Signs in as this address, seeded with `role` unless it exists; default a fresh one. */
  email?: string;
  /** The user's tenant, for customer roles. */
  tenantId?: string;
  /** Default TEST_PASSWORD; give the real one when signing in a user that already exists. */
  password?: string;
}

/** A typed SDK client holding the session of a user of `role`, as a browser after login. */
export async function signedInAs(
  { db, api }: { db: TestDatabase; api: TestApi },
  role: Role,
  options: SignInOptions = {},
): Promise<SvcClient> {
  const email =
    options.email ?? `${role.replaceAll('_', '-')}-${randomUUID().slice(0, 8)}@example.test`;
  const password = options.password ?? TEST_PASSWORD;
  if (!(await userExists(db, email, role))) {
    await seedUser(db, api.hasher, { email, role, tenantId: options.tenantId ?? null, password });
  }
  const svc = createSvcClient({ baseUrl: api.url, headers: { origin: api.origin } });
  const res = await svc.auth.login({ body: { email, password } });
  assert.equal(res.status, 200, `sign-in as ${email}`);
  return svc;
}

/** A user of another role under the same address would make the test prove something else. */
async function userExists(db: TestDatabase, email: string, role: Role): Promise<boolean> {
  const { rows } = await db.pools.mssp.query<{ role: Role }>(
    'SELECT role FROM users WHERE email = $1',
    [email],
  );
  if (rows[0]) assert.equal(rows[0].role, role, `${email} exists with another role`);
  return rows.length > 0;
}
