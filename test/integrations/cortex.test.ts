import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import {
  type CortexClientOptions,
  createCortexClient,
  verdictOf,
} from '../../src/integrations/cortex/cortex-client.ts';
import { IntegrationError } from '../../src/integrations/integration-error.ts';
import {
  type CortexStandIn,
  type CortexStandInOptions,
  startCortexStandIn,
} from '../support/cortex-stand-in.ts';

// Issue 13: the pipeline enriches indicators with the tenant's analysis component (Cortex 3
// REST API) for allow-listed analyzers, by analyzer name. The stand-in speaks Cortex's paths,
// job and report shapes, and holds waitreport until the job ends.

const stands: CortexStandIn[] = [];
after(() => Promise.all(stands.map((s) => s.close())));

const ANALYZERS: CortexStandInOptions['analyzers'] = [
  {
    name: 'AbuseIPDB_1_0',
    dataTypes: ['ip'],
    reports: {
      '203.0.113.7': {
        taxonomies: [
          { level: 'info', namespace: 'AbuseIPDB', predicate: 'Records', value: 212 },
          { level: 'malicious', namespace: 'AbuseIPDB', predicate: 'Abuse', value: '100%' },
          { level: 'suspicious', namespace: 'AbuseIPDB', predicate: 'Reports', value: 'many' },
        ],
        full: { values: [{ abuseConfidenceScore: 100 }] },
      },
      '192.0.2.66': { failure: 'Invalid API key' },
    },
  },
  { name: 'AbuseIPDB_2_0', dataTypes: ['ip'] },
  { name: 'Urlscan_io_Search_0_1_1', dataTypes: ['domain', 'url'] },
];

async function cortex(options: Partial<CortexStandInOptions> = {}): Promise<CortexStandIn> {
  const s = await startCortexStandIn({ analyzers: ANALYZERS, ...options });
  stands.push(s);
  return s;
}

function client(s: CortexStandIn, overrides: Partial<CortexClientOptions> = {}) {
  return createCortexClient({
    baseUrl: s.url,
    auth: { kind: 'bearer', apiKey: s.apiKey },
    fetch: (url, init) => fetch(url, init),
    ...overrides,
  });
}

async function rejection(promise: Promise<unknown>): Promise<IntegrationError> {
  const error = await promise.then(
    () => assert.fail('expected an IntegrationError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof IntegrationError, String(error));
  return error;
}

test('issue 13 analyze by exact name runs that analyzer and returns its taxonomies and the worst level as verdict', async () => {
  const s = await cortex({ jobDelayMs: 150 });
  const result = await client(s).analyze('AbuseIPDB_1_0', {
    dataType: 'ip',
    data: '203.0.113.7',
    message: 'investigation inv-1',
  });
  assert.equal(result.analyzer, 'AbuseIPDB_1_0');
  assert.equal(result.success, true);
  assert.equal(result.verdict, 'malicious');
  assert.deepEqual(
    result.taxonomies.map((t) => [t.level, t.predicate, t.value]),
    [
      ['info', 'Records', 212],
      ['malicious', 'Abuse', '100%'],
      ['suspicious', 'Reports', 'many'],
    ],
  );
  // waitreport was held until the job ended, not polled.
  assert.ok(result.durationMs >= 140, `took ${result.durationMs} ms`);
  const [job, ...others] = s.jobs();
  assert.equal(others.length, 0);
  assert.equal(job?.analyzerId, s.analyzerIds.AbuseIPDB_1_0, 'not AbuseIPDB_2_0');
  assert.deepEqual(
    [job?.dataType, job?.data, job?.tlp, job?.message],
    ['ip', '203.0.113.7', 2, 'investigation inv-1'],
  );
  assert.deepEqual(
    s.requests.map((r) => `${r.method} ${r.path}`),
    [
      'GET /api/analyzer/type/ip',
      `POST /api/analyzer/${s.analyzerIds.AbuseIPDB_1_0}/run`,
      `GET /api/job/${job?.id}/waitreport?atMost=60second`,
    ],
  );
  assert.ok(s.requests.every((r) => r.authorization === `Bearer ${s.apiKey}`));
});

test('issue 13 an analyzer without a configured report answers info; waitReport returns the full report', async () => {
  const s = await cortex();
  const c = client(s);
  const result = await c.analyze('Urlscan_io_Search_0_1_1', {
    dataType: 'domain',
    data: 'example.org',
  });
  assert.deepEqual([result.success, result.verdict], [true, 'info']);
  const job = await c.run(s.analyzerIds.AbuseIPDB_1_0 ?? '', {
    dataType: 'ip',
    data: '203.0.113.7',
  });
  assert.ok(job.status === 'Waiting' || job.status === 'InProgress', job.status);
  const report = await c.waitReport(job.id, 5);
  assert.equal(report.status, 'Success');
  assert.deepEqual(report.full, { values: [{ abuseConfidenceScore: 100 }] });
});

test('issue 13 an unknown analyzer name (or one not taking the data type) is kind rejected and runs nothing', async () => {
  const s = await cortex();
  const c = client(s);
  for (const [name, dataType] of [
    ['AbuseIPDB', 'ip'],
    ['abuseipdb_1_0', 'ip'],
    ['AbuseIPDB_1_0', 'domain'],
  ] as const) {
    const error = await rejection(c.analyze(name, { dataType, data: 'x' }));
    assert.equal(error.kind, 'rejected', name);
    assert.equal(error.retryable, false);
  }
  assert.equal(s.jobs().length, 0);
  // Cortex itself answers 404 for a run against an analyzer id it does not have.
  const missing = await rejection(c.run('0000', { dataType: 'ip', data: '192.0.2.1' }));
  assert.deepEqual([missing.kind, missing.status], ['rejected', 404]);
});

test('issue 13 a failed Cortex job gives success false, verdict info and its error message', async () => {
  const s = await cortex();
  const result = await client(s).analyze('AbuseIPDB_1_0', { dataType: 'ip', data: '192.0.2.66' });
  assert.equal(result.success, false);
  assert.equal(result.verdict, 'info');
  assert.deepEqual(result.taxonomies, []);
  assert.equal(result.errorMessage, 'Invalid API key');
});

test('issue 13 a job still running after atMost is kind timeout', async () => {
  const s = await cortex({ jobDelayMs: 5_000 });
  const started = performance.now();
  const error = await rejection(
    client(s).analyze(
      'AbuseIPDB_1_0',
      { dataType: 'ip', data: '203.0.113.7' },
      { atMostSeconds: 1 },
    ),
  );
  const elapsed = performance.now() - started;
  assert.equal(error.kind, 'timeout');
  assert.match(error.message, /still (Waiting|InProgress) after 1 s/);
  assert.ok(elapsed >= 950 && elapsed < 4000, `gave up after ${elapsed} ms`);
});

test('issue 13 Cortex errors: wrong key is auth (401), 500 is server, a hang is timeout', async () => {
  const s = await cortex();
  const wrong = await rejection(
    client(s, { auth: { kind: 'bearer', apiKey: 'nope' } }).listAnalyzers('ip'),
  );
  assert.deepEqual([wrong.kind, wrong.status], ['auth', 401]);
  s.failNext(1, { status: 500 });
  const server = await rejection(client(s).listAnalyzers('ip'));
  assert.deepEqual([server.kind, server.status, server.retryable], ['server', 500, true]);
  s.failNext(1, 'hang');
  const hang = await rejection(client(s, { timeoutMs: 300 }).listAnalyzers('ip'));
  assert.equal(hang.kind, 'timeout');
  // Basic auth only when the server has a login (Cortex's auth.method.basic).
  const withLogin = await cortex({ login: { user: 'svc', password: 'pw' } });
  const basic = client(withLogin, { auth: { kind: 'basic', user: 'svc', password: 'pw' } });
  assert.equal((await basic.listAnalyzers('ip')).length, 2);
});

test('issue 13 verdict order: malicious > suspicious > safe > info; none is info', () => {
  const t = (level: 'info' | 'safe' | 'suspicious' | 'malicious') => ({
    level,
    namespace: 'n',
    predicate: 'p',
    value: 'v',
  });
  assert.equal(verdictOf([]), 'info');
  assert.equal(verdictOf([t('info'), t('safe')]), 'safe');
  assert.equal(verdictOf([t('safe'), t('suspicious'), t('info')]), 'suspicious');
  assert.equal(verdictOf([t('malicious'), t('safe')]), 'malicious');
});
