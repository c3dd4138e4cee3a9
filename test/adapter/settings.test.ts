import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { runAdapterToExit } from '../support/adapter-process.ts';

let dir: string;
let valid: Record<string, string>;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-adapter-settings-'));
  await writeFile(path.join(dir, 'username'), 'admin\n');
  valid = {
    SVC_API_URL: 'http://127.0.0.1:9',
    SVC_TENANT_ID: randomUUID(),
    SVC_BOOTSTRAP_DIR: dir,
    SVC_INDEXER_URL: 'http://127.0.0.1:9',
    SVC_ADAPTER_HOST: '127.0.0.1',
    SVC_ADAPTER_PORT: '0',
  };
});
after(() => rm(dir, { recursive: true, force: true }));

/** Environment → the one line the adapter must stop with. */
const CASES: [string, (v: Record<string, string>) => Record<string, string | undefined>, RegExp][] =
  [
    ['no svc URL', (v) => ({ ...v, SVC_API_URL: undefined }), /^SVC_API_URL: required$/],
    [
      'svc URL not http(s)',
      (v) => ({ ...v, SVC_API_URL: 'ftp://svc' }),
      /^SVC_API_URL: expected an http\(s\) URL/,
    ],
    [
      'tenant id not a uuid',
      (v) => ({ ...v, SVC_TENANT_ID: 'acme' }),
      /^SVC_TENANT_ID: expected the tenant's uuid, got "acme"$/,
    ],
    [
      'no indexer URL',
      (v) => ({ ...v, SVC_INDEXER_URL: undefined }),
      /^SVC_INDEXER_URL: required$/,
    ],
    [
      'neither bootstrap dir nor token file',
      (v) => ({ ...v, SVC_BOOTSTRAP_DIR: undefined }),
      /^SVC_BOOTSTRAP_DIR: required unless SVC_TOKEN_FILE is set/,
    ],
    [
      'batch above 500',
      (v) => ({ ...v, SVC_INGEST_BATCH: '501' }),
      /^SVC_INGEST_BATCH: expected an integer 1-500, got "501"$/,
    ],
    [
      'poll interval of zero',
      (v) => ({ ...v, SVC_POLL_SECONDS: '0' }),
      /^SVC_POLL_SECONDS: expected a positive number/,
    ],
    [
      'lateness window under a second',
      (v) => ({ ...v, SVC_LATE_WINDOW_SECONDS: '0.5' }),
      /^SVC_LATE_WINDOW_SECONDS: expected a number of seconds from 1 to 86400, e\.g\. 900, got "0\.5"$/,
    ],
    [
      'lateness window that is not a number',
      (v) => ({ ...v, SVC_LATE_WINDOW_SECONDS: 'forever' }),
      /^SVC_LATE_WINDOW_SECONDS: expected a number of seconds from 1 to 86400/,
    ],
    [
      'index pattern with a path',
      (v) => ({ ...v, SVC_INDEXER_INDEX: 'wazuh/../_all' }),
      /^SVC_INDEXER_INDEX: expected an index pattern/,
    ],
    [
      'username file without password file',
      (v) => ({ ...v, SVC_INDEXER_USERNAME_FILE: path.join(dir, 'username') }),
      /^SVC_INDEXER_USERNAME_FILE and SVC_INDEXER_PASSWORD_FILE: set both/,
    ],
    [
      'password file that does not exist',
      (v) => ({
        ...v,
        SVC_INDEXER_USERNAME_FILE: path.join(dir, 'username'),
        SVC_INDEXER_PASSWORD_FILE: path.join(dir, 'missing'),
      }),
      /^SVC_INDEXER_PASSWORD_FILE: cannot read .*missing: ENOENT$/,
    ],
    [
      'CA file that does not exist',
      (v) => ({ ...v, SVC_INDEXER_CA_FILE: path.join(dir, 'ca.pem') }),
      /^SVC_INDEXER_CA_FILE: cannot read .*ca\.pem: ENOENT$/,
    ],
    [
      'unknown log level',
      (v) => ({ ...v, SVC_LOG_LEVEL: 'verbose' }),
      /^SVC_LOG_LEVEL: expected one of/,
    ],
  ];

function defined(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined),
  );
}

test('svc adapter refuses bad settings: exit 2 and one line naming the variable, before it calls anything', async () => {
  const results = await Promise.all(CASES.map(([, env]) => runAdapterToExit(defined(env(valid)))));
  CASES.forEach(([name, , expected], i) => {
    const { code, stdout, stderr } = results[i] as Awaited<ReturnType<typeof runAdapterToExit>>;
    assert.equal(code, 2, `${name}: exit code`);
    assert.equal(stdout, '', `${name}: nothing logged`);
    const lines = stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, `${name}: one line, got ${stderr}`);
    const line = (lines[0] ?? '').replace(/^svc adapter: invalid configuration: /, '');
    assert.notEqual(line, lines[0], `${name}: the line says it is the configuration`);
    assert.match(line, expected, name);
  });
});

test('svc adapter whose health port is taken stops with exit 2 naming SVC_ADAPTER_PORT', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as { port: number }).port;
  try {
    const { code, stderr } = await runAdapterToExit({ ...valid, SVC_ADAPTER_PORT: String(port) });
    assert.equal(code, 2);
    assert.match(
      stderr.trimEnd(),
      new RegExp(
        `^svc adapter: invalid configuration: SVC_ADAPTER_PORT: cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE$`,
      ),
    );
  } finally {
    taken.close();
  }
});
