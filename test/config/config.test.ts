import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.ts';

test('defaults: port 8080, internal auth, embedded database under ./.svc', () => {
  const config = loadConfig({}, '/srv/app');
  assert.equal(config.port, 8080);
  assert.equal(config.authMode, 'internal');
  assert.equal(config.dataDir, '/srv/app/.svc');
  assert.deepEqual(config.database, { kind: 'embedded' });
});

test('§5.1 SVC_AUTH_MODE accepts internal and proxy only', () => {
  assert.equal(loadConfig({ SVC_AUTH_MODE: 'proxy' }).authMode, 'proxy');
  assert.throws(() => loadConfig({ SVC_AUTH_MODE: 'hybrid' }), {
    name: 'ConfigError',
    message: 'SVC_AUTH_MODE: expected internal or proxy, got "hybrid"',
  });
});

test('an invalid value stops with one line naming the variable and what is expected', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [
      { SVC_PORT: 'eighty' },
      /^SVC_PORT: expected an integer port 0-65535 \(0: any free port\), got "eighty"$/,
    ],
    [{ SVC_PORT: '70000' }, /^SVC_PORT: expected/],
    [{ SVC_LOG_LEVEL: 'loud' }, /^SVC_LOG_LEVEL: expected one of/],
    [{ SVC_TRUSTED_PROXY_CIDRS: '10.0.0.0/8,banana' }, /^SVC_TRUSTED_PROXY_CIDRS: expected/],
    [{ SVC_TRUSTED_PROXY_CIDRS: '300.1.1.1/8' }, /^SVC_TRUSTED_PROXY_CIDRS: expected/],
    [{ SVC_TRUSTED_PROXY_CIDRS: '10.0.0.0/33' }, /^SVC_TRUSTED_PROXY_CIDRS: expected/],
    [{ SVC_DATABASE_HOST: 'db', SVC_DATABASE_PORT: '0' }, /^SVC_DATABASE_PORT: expected/],
    [{ SVC_DATABASE_BOOTSTRAP_URL: 'mysql://root@db' }, /^SVC_DATABASE_BOOTSTRAP_URL: expected/],
    // Numbers are plain decimals: TypeBox alone would read these as 8080, 16, 10000 and 1.
    [
      { SVC_PORT: '8080.5' },
      /^SVC_PORT: expected an integer port 0-65535 \(0: any free port\), got "8080.5"$/,
    ],
    [{ SVC_EDGE_PORT_BASE: '0x5000' }, /^SVC_EDGE_PORT_BASE: expected/],
    [{ SVC_EDGE_PROXY: 'yes' }, /^SVC_EDGE_PROXY: expected on or off/],
    [{ SVC_CLUSTER_DOMAIN: 'cluster.local\nx' }, /^SVC_CLUSTER_DOMAIN: expected/],
    [{ SVC_ORCHESTRATOR_CONCURRENCY: '1e1' }, /^SVC_ORCHESTRATOR_CONCURRENCY: expected/],
    [{ SVC_ORCHESTRATOR_CONCURRENCY: 'true' }, /^SVC_ORCHESTRATOR_CONCURRENCY: expected/],
    [{ SVC_PROJECTOR_CONCURRENCY: '2.0' }, /^SVC_PROJECTOR_CONCURRENCY: expected/],
  ];
  for (const [env, message] of cases) {
    assert.throws(
      () => loadConfig(env),
      (e: Error) =>
        e instanceof ConfigError && message.test(e.message) && !e.message.includes('\n'),
    );
  }
});

const SIX = {
  SVC_DATABASE_ADMIN_USER: 'svc_admin',
  SVC_DATABASE_ADMIN_PASSWORD: 'a',
  SVC_DATABASE_APP_USER: 'svc_app',
  SVC_DATABASE_APP_PASSWORD: 'b',
  SVC_DATABASE_MSSP_USER: 'svc_mssp',
  SVC_DATABASE_MSSP_PASSWORD: 'c',
};

test('§2.9 external database: host plus the six credentials from env vars', () => {
  const config = loadConfig({ SVC_DATABASE_HOST: 'db.internal', ...SIX });
  assert.deepEqual(config.database, {
    kind: 'external',
    host: 'db.internal',
    port: 5432,
    database: 'svc',
    credentials: {
      admin: { user: 'svc_admin', password: 'a' },
      app: { user: 'svc_app', password: 'b' },
      mssp: { user: 'svc_mssp', password: 'c' },
    },
    bootstrapUrl: undefined,
    ssl: false,
  });
});

test('§2.9 external database: the six credentials from a mounted Secret directory', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-secret-'));
  try {
    for (const [key, value] of Object.entries(SIX)) {
      await writeFile(path.join(dir, key.replace('SVC_DATABASE_', '').toLowerCase()), `${value}\n`);
    }
    const config = loadConfig({ SVC_DATABASE_HOST: 'db', SVC_DATABASE_CREDENTIALS_DIR: dir });
    assert.equal(config.database.kind, 'external');
    if (config.database.kind === 'external') {
      assert.deepEqual(config.database.credentials?.mssp, { user: 'svc_mssp', password: 'c' });
    }
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('§2.9 an incomplete credential set names the first missing one', () => {
  const { SVC_DATABASE_MSSP_PASSWORD: _omitted, ...five } = SIX;
  assert.throws(
    () => loadConfig({ SVC_DATABASE_HOST: 'db', ...five }),
    /^ConfigError: SVC_DATABASE_MSSP_PASSWORD: expected a value/,
  );
  assert.throws(
    () => loadConfig({ SVC_DATABASE_HOST: 'db' }),
    /SVC_DATABASE_ADMIN_USER: expected the six database credentials/,
  );
});

test('issue 27.1 the audit role credential is optional, from env vars or the Secret directory, user and password together', async () => {
  const without = loadConfig({ SVC_DATABASE_HOST: 'db', ...SIX }).database;
  assert.equal(without.kind === 'external' && without.credentials?.audit, undefined);
  const withEnv = loadConfig({
    SVC_DATABASE_HOST: 'db',
    ...SIX,
    SVC_DATABASE_AUDIT_USER: 'svc_audit',
    SVC_DATABASE_AUDIT_PASSWORD: 'd',
  }).database;
  assert.deepEqual(withEnv.kind === 'external' && withEnv.credentials?.audit, {
    user: 'svc_audit',
    password: 'd',
  });
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-secret-'));
  try {
    await writeFile(path.join(dir, 'audit_user'), 'svc_audit\n');
    await writeFile(path.join(dir, 'audit_password'), 'e\n');
    const fromDir = loadConfig({
      SVC_DATABASE_HOST: 'db',
      ...SIX,
      SVC_DATABASE_CREDENTIALS_DIR: dir,
    }).database;
    assert.deepEqual(fromDir.kind === 'external' && fromDir.credentials?.audit, {
      user: 'svc_audit',
      password: 'e',
    });
  } finally {
    await rm(dir, { recursive: true });
  }
  assert.throws(
    () => loadConfig({ SVC_DATABASE_HOST: 'db', ...SIX, SVC_DATABASE_AUDIT_USER: 'svc_audit' }),
    /^ConfigError: SVC_DATABASE_AUDIT_PASSWORD: expected a value .*go together$/,
  );
});

test('a bootstrap superuser URL alone is enough: host and port come from it', () => {
  const config = loadConfig({
    SVC_DATABASE_BOOTSTRAP_URL: 'postgres://postgres:pw@pg.local:6543/postgres',
  });
  assert.equal(config.database.kind, 'external');
  if (config.database.kind === 'external') {
    assert.equal(config.database.host, 'pg.local');
    assert.equal(config.database.port, 6543);
    assert.equal(config.database.credentials, undefined);
  }
});

test('SVC_TENANT_SCHEDULING: JSON of the system chart’s tenants.scheduling, read complete; unset means no placement', () => {
  assert.deepEqual(loadConfig({}).orchestrator.tenantScheduling, {
    nodeSelector: {},
    tolerations: [],
    workloads: {},
  });
  const toleration = { key: 'svc.test/real-node', operator: 'Exists', effect: 'NoSchedule' };
  const read = loadConfig({
    SVC_TENANT_SCHEDULING: JSON.stringify({
      nodeSelector: { pool: 'tenants' },
      workloads: {
        'svc-adapter': { nodeSelector: { 'kubernetes.io/hostname': 'real-1' } },
        'monitor-indexer': { tolerations: [toleration] },
      },
    }),
  }).orchestrator.tenantScheduling;
  // A workload's entry replaces both defaults; what it leaves out is none, rendered explicitly.
  assert.deepEqual(read, {
    nodeSelector: { pool: 'tenants' },
    tolerations: [],
    workloads: {
      'svc-adapter': { nodeSelector: { 'kubernetes.io/hostname': 'real-1' }, tolerations: [] },
      'monitor-indexer': { nodeSelector: {}, tolerations: [toleration] },
    },
  });
});

test('SVC_TENANT_SCHEDULING: an unknown workload, a bad shape or no JSON stops with one line naming the variable', () => {
  const cases: [unknown, RegExp][] = [
    [
      { workloads: { 'monitor-indexr': { nodeSelector: {} } } },
      /^SVC_TENANT_SCHEDULING: unknown workload "monitor-indexr" in workloads; the tenant package's workloads are svc-adapter, monitor-manager, monitor-indexer, .*analysis-search$/,
    ],
    [
      { tolerations: [{ key: 'pool', operator: 'Maybe' }] },
      /^SVC_TENANT_SCHEDULING: \/tolerations\/0/,
    ],
    [{ nodeSelector: { pool: 'has space' } }, /^SVC_TENANT_SCHEDULING: \/nodeSelector/],
    [{ affinity: {} }, /^SVC_TENANT_SCHEDULING: \/affinity is not allowed; expected a JSON object/],
    [
      { workloads: { cases: { nodeSelector: {}, replicas: 2 } } },
      /^SVC_TENANT_SCHEDULING: \/workloads\/cases\/replicas is not allowed/,
    ],
    [[], /^SVC_TENANT_SCHEDULING: \/ must be object; expected a JSON object/],
  ];
  for (const [value, message] of cases) {
    assert.throws(
      () => loadConfig({ SVC_TENANT_SCHEDULING: JSON.stringify(value) }),
      (e: Error) =>
        e instanceof ConfigError && message.test(e.message) && !e.message.includes('\n'),
      JSON.stringify(value),
    );
  }
  assert.throws(() => loadConfig({ SVC_TENANT_SCHEDULING: '{nodeSelector:' }), {
    name: 'ConfigError',
    message: /^SVC_TENANT_SCHEDULING: not JSON; expected a JSON object/,
  });
});

test('SVC_DATABASE_POOLER_HOST/PORT: a pooler in front of an external database, both or neither', () => {
  const config = loadConfig({
    SVC_DATABASE_HOST: 'db',
    ...SIX,
    SVC_DATABASE_POOLER_HOST: 'pgbouncer.svc-system',
    SVC_DATABASE_POOLER_PORT: '6432',
  });
  assert.equal(config.database.kind, 'external');
  assert.deepEqual(config.database.kind === 'external' && config.database.pooler, {
    host: 'pgbouncer.svc-system',
    port: 6432,
  });
  assert.equal(
    'pooler' in loadConfig({ SVC_DATABASE_HOST: 'db', ...SIX }).database,
    false,
    'no pooler unless configured',
  );
  const refused: [Record<string, string>, string][] = [
    [
      { SVC_DATABASE_HOST: 'db', ...SIX, SVC_DATABASE_POOLER_HOST: 'pgbouncer' },
      "SVC_DATABASE_POOLER_PORT: expected a value; the pooler's host and port go together",
    ],
    [
      { SVC_DATABASE_HOST: 'db', ...SIX, SVC_DATABASE_POOLER_PORT: '6432' },
      "SVC_DATABASE_POOLER_HOST: expected a value; the pooler's host and port go together",
    ],
    [
      { SVC_DATABASE_POOLER_HOST: 'pgbouncer', SVC_DATABASE_POOLER_PORT: '6432' },
      'SVC_DATABASE_HOST: expected the PostgreSQL hostname when SVC_DATABASE_POOLER_HOST is set (the pooler fronts an external database; LISTEN and session locks still connect to it directly)',
    ],
    [
      {
        SVC_DATABASE_BOOTSTRAP_URL: 'postgres://postgres:pw@db/postgres',
        SVC_DATABASE_POOLER_HOST: 'pgbouncer',
        SVC_DATABASE_POOLER_PORT: '6432',
      },
      'SVC_DATABASE_HOST: expected the PostgreSQL hostname when SVC_DATABASE_POOLER_HOST is set (the pooler fronts an external database; LISTEN and session locks still connect to it directly)',
    ],
    [
      {
        SVC_DATABASE_HOST: 'db',
        ...SIX,
        SVC_DATABASE_POOLER_HOST: 'pg bouncer',
        SVC_DATABASE_POOLER_PORT: '6432',
      },
      'SVC_DATABASE_POOLER_HOST: expected the hostname of a PgBouncer in transaction-pooling mode, got "pg bouncer"',
    ],
    [
      {
        SVC_DATABASE_HOST: 'db',
        ...SIX,
        SVC_DATABASE_POOLER_HOST: 'pgbouncer',
        SVC_DATABASE_POOLER_PORT: '65536',
      },
      'SVC_DATABASE_POOLER_PORT: expected an integer port 1-65535, got "65536"',
    ],
  ];
  for (const [env, message] of refused) {
    assert.throws(() => loadConfig(env), { name: 'ConfigError', message });
  }
});

test('SVC_DATABASE_POOL_MAX: the app pool size, 1-1000, absent by default', () => {
  assert.equal(loadConfig({}).database.poolMax, undefined);
  assert.equal(loadConfig({ SVC_DATABASE_POOL_MAX: '40' }).database.poolMax, 40);
  assert.equal(
    loadConfig({ SVC_DATABASE_HOST: 'db', ...SIX, SVC_DATABASE_POOL_MAX: '1000' }).database.poolMax,
    1000,
  );
  for (const bad of ['0', '1001', '10.5', '1e2', 'ten', '-3']) {
    assert.throws(() => loadConfig({ SVC_DATABASE_POOL_MAX: bad }), {
      name: 'ConfigError',
      message: `SVC_DATABASE_POOL_MAX: expected an integer 1-1000 (connections in the app pool), got ${JSON.stringify(bad)}`,
    });
  }
});
