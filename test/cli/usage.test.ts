import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createPasswordHasher } from '../../src/auth/passwords.ts';
import { startEmbedded } from '../../src/db/embedded.ts';
import { createLogger } from '../../src/log/index.ts';
import { createEmptyDatabase, externalDatabaseEnv } from '../support/database.ts';

/** The `svc` program as an OS process, exactly as bin/svc.js runs it. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SVC = `${JSON.stringify(process.execPath)} --import tsx src/cli/main.ts`;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` through bash, so a test can pipe into it as a user would. */
function svc(args: string, env: NodeJS.ProcessEnv, stdin = ''): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['-c', `${stdin}${SVC} ${args}`],
      { cwd: ROOT, env, timeout: 90_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          stdout,
          stderr,
        }),
    );
  });
}

let dataDir: string;
let env: NodeJS.ProcessEnv;
before(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-usage-'));
  env = { ...process.env, SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'warn' };
});
after(() => rm(dataDir, { recursive: true, force: true }));

test('issue 16 item 4: an unknown command or option exits 2 with the error and one hint line, --help or not', async () => {
  const cases: [string, string][] = [
    ['frobnicate --help', "error: unknown command 'frobnicate'\n(run 'svc --help' for usage)\n"],
    ['frobnicate', "error: unknown command 'frobnicate'\n(run 'svc --help' for usage)\n"],
    ['help frobnicate', "error: unknown command 'frobnicate'\n(run 'svc --help' for usage)\n"],
    ['auth nope --help', "error: unknown command 'nope'\n(run 'svc auth --help' for usage)\n"],
    ['--bogus', "error: unknown option '--bogus'\n(run 'svc --help' for usage)\n"],
    ['serve --bogus', "error: unknown option '--bogus'\n(run 'svc serve --help' for usage)\n"],
    [
      'auth create-admin',
      "error: required option '--email <email>' not specified\n(run 'svc auth create-admin --help' for usage)\n",
    ],
  ];
  const outcomes = await Promise.all(cases.map(([args]) => svc(args, env)));
  for (const [i, [args, stderr]] of cases.entries())
    assert.deepEqual(outcomes[i], { code: 2, stdout: '', stderr }, args);
  const help = await svc('auth --help', env);
  assert.deepEqual([help.code, help.stderr], [0, '']);
  assert.match(help.stdout, /^Usage: svc auth /);
});

/**
 * The stored argon2id hash of a user's password, read as the embedded server's superuser; the
 * server is held open for the rest of the test (svc processes attach to it).
 */
async function hashReader(): Promise<{
  hash(email: string): Promise<string | undefined>;
  close(): Promise<void>;
}> {
  const server = await startEmbedded(dataDir, createLogger('silent'));
  const client = new pg.Client({
    host: server.host,
    port: server.port,
    ...server.superuser,
    database: 'svc',
  });
  await client.connect();
  return {
    async hash(email) {
      const { rows } = await client.query<{ password_hash: string }>(
        `SELECT c.password_hash FROM password_credentials c JOIN users u ON u.id = c.user_id
          WHERE u.email = $1`,
        [email],
      );
      return rows[0]?.password_hash;
    },
    async close() {
      await client.end();
      await server.stop();
    },
  };
}

test('issue 16 items 5 and 6: create-admin before the first serve migrates the embedded database; piped stdin gives its first line; control characters are refused', async () => {
  const created = await svc(
    'auth create-admin --email first@localhost',
    env,
    `printf 'violet tractor unkempt\\nviolet tractor unkempt\\n' | `,
  );
  assert.deepEqual(created, {
    code: 0,
    stdout:
      'platform_admin first@localhost created; the password must be changed at next sign-in\n',
    stderr: '',
  });
  const stored = await hashReader();
  try {
    const hash = await stored.hash('first@localhost');
    assert.ok(hash);
    const hasher = createPasswordHasher({ concurrency: 1, queue: 0 });
    assert.equal((await hasher.verify(hash, 'violet tractor unkempt')).ok, true, 'the first line');

    const refused = await svc(
      'auth set-password first@localhost',
      env,
      `printf 'violet\\ttractor unkempt\\n' | `,
    );
    assert.deepEqual(refused, {
      code: 1,
      stdout: '',
      stderr:
        'svc: the password is refused: it contains a control character such as a tab; choose another\n',
    });
    assert.equal(await stored.hash('first@localhost'), hash, 'the credential is unchanged');

    // A writer that never stops: svc takes its first line and exits instead of reading forever.
    const endless = await svc(
      'auth set-password first@localhost',
      env,
      `yes 'amber walrus quietly' | `,
    );
    assert.equal(endless.code, 0, endless.stderr);
    const replaced = await stored.hash('first@localhost');
    assert.ok(replaced);
    assert.equal((await hasher.verify(replaced, 'amber walrus quietly')).ok, true);
  } finally {
    await stored.close();
  }
});

test('issue 16 item 6: on an external database without a schema, svc auth says in one line to run svc migrate, exit 2', async () => {
  const empty = await createEmptyDatabase();
  try {
    const external = {
      ...env,
      ...externalDatabaseEnv(empty.target),
    };
    assert.deepEqual(await svc('auth set-password someone@localhost --generate', external), {
      code: 2,
      stdout: '',
      stderr:
        'svc: relation "users" does not exist: the database has no schema yet; run `svc migrate` first\n',
    });
  } finally {
    await empty.drop();
  }
});
