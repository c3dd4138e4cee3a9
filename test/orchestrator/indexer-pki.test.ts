import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import bcrypt from 'bcryptjs';
import { parse } from 'yaml';
import {
  CA_YEARS,
  dnsNamesOf,
  ensureIndexerPki,
  INDEXER_ADMIN_DN,
  INDEXER_NODE_DN,
  INDEXER_TLS_SECRET,
  type IndexerTlsData,
  indexerPkiProblem,
  indexerTlsIssuedAt,
  indexerTlsRevision,
  issueIndexerPki,
  LEAF_YEARS,
  type SecretAccess,
} from '../../src/orchestrator/indexer-pki.ts';
import {
  ADAPTER_INDEXER_SECRET,
  ensureIndexerUsers,
  INDEXER_SECURITY_SECRET,
  securityConfigMatches,
} from '../../src/orchestrator/indexer-security.ts';

// The tenant indexer's PKI and users as svc issues them at provisioning (docs/charts-tenant.md
// "Indexer TLS"). Certificates are checked with node:crypto and, independently, with openssl.

const NAMESPACE = 'tenant-acme';
const NOW = new Date('2026-03-01T12:00:00Z');
const DAY = 24 * 3_600_000;
const K = INDEXER_TLS_SECRET.keys;
const exec = promisify(execFile);
const scratch = await mkdtemp(join(tmpdir(), 'svc-indexer-pki-'));
after(() => rm(scratch, { recursive: true, force: true }));

const issued: IndexerTlsData = await issueIndexerPki(NAMESPACE, NOW);
const cert = (key: string) => new X509Certificate(issued[key as keyof IndexerTlsData]);

/** Kubernetes' Secret API as the orchestrator sees it, over a map (the real one: provisioning tests). */
function secretStore(): SecretAccess & {
  writes: string[];
  data: Map<string, Record<string, string>>;
} {
  const data = new Map<string, Record<string, string>>();
  const writes: string[] = [];
  return {
    data,
    writes,
    async readSecret(namespace, name) {
      return data.get(`${namespace}/${name}`);
    },
    async putSecret(namespace, name, value) {
      const key = `${namespace}/${name}`;
      const existed = data.has(key);
      data.set(key, { ...value });
      writes.push(key);
      return existed ? 'replaced' : 'created';
    },
  };
}

test('the node and admin certificates chain to the tenant CA, and each key is PKCS#8 and belongs to its certificate', async () => {
  const ca = cert(K.ca);
  assert.equal(ca.ca, true);
  assert.ok(ca.verify(ca.publicKey), 'the CA is self-signed');
  for (const [certKey, keyKey] of [
    [K.node, K.nodeKey],
    [K.admin, K.adminKey],
  ] as const) {
    const leaf = cert(certKey);
    assert.equal(leaf.ca, false, `${certKey} is no CA`);
    assert.ok(leaf.verify(ca.publicKey), `${certKey} is signed by the CA`);
    assert.equal(leaf.checkIssued(ca), true);
    const pem = issued[keyKey];
    assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/, `${keyKey} is PKCS#8`);
    const key = createPrivateKey(pem);
    assert.equal(key.asymmetricKeyType, 'rsa');
    assert.equal(key.asymmetricKeyDetails?.modulusLength, 2048);
    assert.ok(leaf.checkPrivateKey(key), `${keyKey} matches ${certKey}`);
    assert.equal(
      createPublicKey(key).export({ format: 'pem', type: 'spki' }),
      leaf.publicKey.export({ format: 'pem', type: 'spki' }),
    );
  }
  // A key of the other certificate does not match: the check above can fail.
  assert.equal(cert(K.node).checkPrivateKey(createPrivateKey(issued[K.adminKey])), false);
  assert.equal(
    cert(K.node).verify(cert(K.node).publicKey),
    false,
    'the node cert is not self-signed',
  );

  // openssl agrees, and prints the subjects as the chart's opensearch.yml names them (RFC 2253).
  for (const [name, text] of Object.entries(issued)) await writeFile(join(scratch, name), text);
  for (const leaf of [K.node, K.admin]) {
    const { stdout } = await exec('openssl', [
      'verify',
      '-attime',
      String(Math.floor(NOW.getTime() / 1000)),
      '-purpose',
      leaf === K.node ? 'sslserver' : 'sslclient',
      '-CAfile',
      join(scratch, K.ca),
      join(scratch, leaf),
    ]);
    assert.match(stdout, /: OK/);
  }
  const subject = async (file: string) =>
    (
      await exec('openssl', [
        'x509',
        '-in',
        join(scratch, file),
        '-noout',
        '-subject',
        '-nameopt',
        'RFC2253',
      ])
    ).stdout
      .trim()
      .replace(/^subject=\s*/, '');
  assert.equal(await subject(K.node), INDEXER_NODE_DN);
  assert.equal(await subject(K.admin), INDEXER_ADMIN_DN);
});

test('the node certificate names exactly the indexer Service and its pod in the tenant namespace; usages fit node and admin', () => {
  assert.deepEqual(dnsNamesOf(cert(K.node)), [
    'monitor-indexer',
    'monitor-indexer.tenant-acme',
    'monitor-indexer.tenant-acme.svc',
    'monitor-indexer.tenant-acme.svc.cluster.local',
    'monitor-indexer-0.monitor-indexer.tenant-acme.svc',
    'monitor-indexer-0.monitor-indexer.tenant-acme.svc.cluster.local',
  ]);
  assert.equal(
    cert(K.node).checkHost('monitor-indexer.tenant-acme.svc'),
    'monitor-indexer.tenant-acme.svc',
  );
  assert.equal(cert(K.node).checkHost('monitor-indexer.tenant-other.svc'), undefined);
  assert.deepEqual(dnsNamesOf(cert(K.admin)), [], 'the admin certificate names no host');
  assert.deepEqual(cert(K.node).keyUsage?.sort(), ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
  assert.deepEqual(cert(K.admin).keyUsage, ['1.3.6.1.5.5.7.3.2']);
});

test('validity: the CA for 10 years, node and admin for 2, all from a few minutes before issue', () => {
  const years = (n: number) => {
    const d = new Date(NOW);
    d.setUTCFullYear(d.getUTCFullYear() + n);
    return d.getTime();
  };
  assert.equal(Date.parse(cert(K.ca).validTo), years(CA_YEARS));
  assert.equal(CA_YEARS, 10);
  assert.equal(LEAF_YEARS, 2);
  for (const key of [K.node, K.admin]) assert.equal(Date.parse(cert(key).validTo), years(2));
  for (const key of [K.ca, K.node, K.admin]) {
    const from = Date.parse(cert(key).validFrom);
    assert.ok(from <= NOW.getTime() && from >= NOW.getTime() - 10 * 60_000, key);
  }
  assert.notEqual(cert(K.node).serialNumber, cert(K.admin).serialNumber);
});

test('a stored set is kept only while it fits: this namespace, intact, more than 30 days left', async () => {
  assert.equal(indexerPkiProblem(issued, NAMESPACE, NOW), undefined);
  assert.match(indexerPkiProblem(issued, 'tenant-other', NOW) ?? '', /names monitor-indexer,/);
  assert.equal(indexerPkiProblem(undefined, NAMESPACE, NOW), 'missing');
  const expiry = Date.parse(cert(K.node).validTo);
  assert.equal(indexerPkiProblem(issued, NAMESPACE, new Date(expiry - 31 * DAY)), undefined);
  assert.match(
    indexerPkiProblem(issued, NAMESPACE, new Date(expiry - 29 * DAY)) ?? '',
    /the node certificate expires/,
  );
  const other = await issueIndexerPki(NAMESPACE, NOW);
  assert.match(
    indexerPkiProblem({ ...issued, [K.nodeKey]: other[K.nodeKey] }, NAMESPACE, NOW) ?? '',
    /node key does not match/,
  );
  assert.match(
    indexerPkiProblem({ ...issued, [K.ca]: other[K.ca] }, NAMESPACE, NOW) ?? '',
    /not issued by its CA/,
  );
  assert.match(
    indexerPkiProblem({ ...issued, [K.admin]: 'junk' }, NAMESPACE, NOW) ?? '',
    /unreadable/,
  );
});

test('ensureIndexerPki: issues once, keeps a valid Secret on retry, replaces one for another namespace or near expiry', async () => {
  const store = secretStore();
  const labels = { 'managed-by': 'svc' };
  const first = await ensureIndexerPki(store, NAMESPACE, labels, NOW);
  const key = `${NAMESPACE}/${INDEXER_TLS_SECRET.name}`;
  const written = store.data.get(key);
  assert.deepEqual(first, { action: 'issued', reason: 'missing', data: written });
  assert.deepEqual(Object.keys(written ?? {}).sort(), Object.values(K).sort());

  assert.deepEqual(await ensureIndexerPki(store, NAMESPACE, labels, NOW), {
    action: 'kept',
    data: written,
  });
  assert.deepEqual(
    await ensureIndexerPki(store, NAMESPACE, labels, new Date(NOW.getTime() + 365 * DAY)),
    { action: 'kept', data: written },
  );
  assert.deepEqual(store.writes, [key], 'kept means not written again');
  assert.deepEqual(store.data.get(key), written);

  // Near expiry (29 days left on the node certificate): a new set, valid from then on.
  const late = new Date(
    Date.parse(new X509Certificate(written?.[K.node] ?? '').validTo) - 29 * DAY,
  );
  const renewed = await ensureIndexerPki(store, NAMESPACE, labels, late);
  assert.equal(renewed.action, 'issued');
  const fresh = store.data.get(key);
  assert.notEqual(fresh?.[K.node], written?.[K.node]);
  assert.equal(indexerPkiProblem(fresh, NAMESPACE, late), undefined);

  // A Secret copied from another namespace (a restored backup, a renamed tenant) is replaced.
  store.data.set(`tenant-other/${INDEXER_TLS_SECRET.name}`, written as Record<string, string>);
  const moved = await ensureIndexerPki(store, 'tenant-other', labels, NOW);
  assert.equal(moved.action, 'issued');
  assert.deepEqual(
    dnsNamesOf(
      new X509Certificate(
        store.data.get(`tenant-other/${INDEXER_TLS_SECRET.name}`)?.[K.node] ?? '',
      ),
    ).at(-1),
    'monitor-indexer-0.monitor-indexer.tenant-other.svc.cluster.local',
  );
});

test('the adapter’s indexer user: a generated password kept across retries, bcrypt-hashed into the security configuration with a read-only role on wazuh-alerts-*', async () => {
  const store = secretStore();
  await ensureIndexerUsers(store, NAMESPACE, 'admin-pass-1', {});
  const login = store.data.get(`${NAMESPACE}/${ADAPTER_INDEXER_SECRET.name}`);
  assert.equal(login?.username, 'svc-adapter');
  assert.ok((login?.password?.length ?? 0) >= 32, 'a long random password');
  const files = store.data.get(`${NAMESPACE}/${INDEXER_SECURITY_SECRET.name}`) ?? {};
  const users = parse(files['internal_users.yml'] ?? '');
  assert.deepEqual(users._meta, { type: 'internalusers', config_version: 2 });
  assert.ok(bcrypt.compareSync(login?.password ?? '', users['svc-adapter'].hash));
  assert.ok(bcrypt.compareSync('admin-pass-1', users.admin.hash));
  assert.equal(bcrypt.compareSync('admin-pass-1', users['svc-adapter'].hash), false);
  assert.match(users['svc-adapter'].hash, /^\$2[aby]\$12\$/, 'cost 12, as the plugin’s hash.sh');
  assert.equal(users['svc-adapter'].backend_roles, undefined, 'no backend role grants more');
  const roles = parse(files['roles.yml'] ?? '');
  assert.deepEqual(roles.svc_adapter_read.index_permissions, [
    { index_patterns: ['wazuh-alerts-*'], allowed_actions: ['read', 'search'] },
  ]);
  assert.deepEqual(roles.svc_adapter_read.cluster_permissions, []);
  const mapping = parse(files['roles_mapping.yml'] ?? '');
  assert.deepEqual(mapping.svc_adapter_read.users, ['svc-adapter']);
  const mappedToAdapter = Object.entries(mapping).filter(([, m]) =>
    ((m as { users?: string[] }).users ?? []).includes('svc-adapter'),
  );
  assert.deepEqual(
    mappedToAdapter.map(([role]) => role),
    ['svc_adapter_read'],
    'the adapter holds that role and no other',
  );

  // A retry keeps both Secrets as they are.
  const writes = store.writes.length;
  await ensureIndexerUsers(store, NAMESPACE, 'admin-pass-1', {});
  assert.equal(store.writes.length, writes);
  // A changed admin password rewrites the configuration, never the adapter's password.
  await ensureIndexerUsers(store, NAMESPACE, 'admin-pass-2', {});
  const rewritten = store.data.get(`${NAMESPACE}/${INDEXER_SECURITY_SECRET.name}`);
  assert.ok(
    await securityConfigMatches(rewritten, {
      admin: 'admin-pass-2',
      adapter: login?.password ?? '',
    }),
  );
  assert.equal(
    await securityConfigMatches(rewritten, {
      admin: 'admin-pass-1',
      adapter: login?.password ?? '',
    }),
    false,
  );
  assert.deepEqual(store.data.get(`${NAMESPACE}/${ADAPTER_INDEXER_SECRET.name}`), login);
});

test('a certificate set’s revision names its certificates (the readers’ pod-template annotation) and its issue time is read back from the node certificate', async () => {
  const revision = indexerTlsRevision(issued);
  assert.match(revision, /^[0-9a-f]{16}$/);
  assert.equal(indexerTlsRevision({ ...issued }), revision, 'stable');
  const other = await issueIndexerPki(NAMESPACE, NOW);
  assert.notEqual(indexerTlsRevision(other), revision);
  for (const key of [K.ca, K.node, K.admin]) {
    assert.notEqual(indexerTlsRevision({ ...issued, [key]: other[key] }), revision, key);
  }
  // At second precision, as X.509 times are: NOW has none below the second.
  assert.equal(indexerTlsIssuedAt(issued)?.toISOString(), NOW.toISOString());
  assert.equal(indexerTlsIssuedAt({ ...issued, [K.node]: 'junk' }), undefined);
});
