import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/db/embedded.ts';

/*
 * Issue 18 item 10: whoever attaches to the embedded PostgreSQL owns it. Real OS processes:
 * `svc serve` on an embedded database, SIGKILLed (its postgres survives), started again (it
 * attaches), stopped with SIGTERM: the postgres must be gone. And the rule's one exception:
 * while another svc process on the same data directory is alive, it is left running for it.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

let dataDir: string;

before(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-owner-'));
});
after(async () => {
  // Whatever a failed assertion left behind: never leak a postgres into the run.
  const pid = await postmasterPid().catch(() => undefined);
  if (pid !== undefined && alive(pid)) {
    process.kill(pid, 'SIGINT');
    await until(() => !alive(pid));
  }
  await rm(dataDir, { recursive: true, force: true });
});

interface Serve {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/** `svc serve` in its own process group, so a signal to its pid alone spares its postgres. */
async function serve(): Promise<Serve> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_LOG_LEVEL: 'info',
  };
  delete env.KUBECONFIG;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 360; i++) {
    if (child.exitCode !== null) throw new Error(`svc serve exited:\n${output}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { child, url, output: () => output };
    await sleep(250);
  }
  throw new Error(`svc serve did not become healthy:\n${output}`);
}

async function signal(svc: Serve, name: NodeJS.Signals): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) =>
    svc.child.once('exit', (code) => resolve(code)),
  );
  assert.ok(svc.child.pid);
  process.kill(svc.child.pid, name);
  return exited;
}

async function postmasterPid(): Promise<number> {
  const text = await readFile(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8');
  return Number(text.split('\n')[0]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls for a condition an OS process reaches by itself (exit), bounded at 15 s. */
async function until(check: () => boolean): Promise<boolean> {
  for (let i = 0; i < 150; i++) {
    if (check()) return true;
    await sleep(100);
  }
  return check();
}

test('issue 18 item 10: svc serve that attached to the embedded postgres left by a SIGKILLed svc stops it on SIGTERM', async () => {
  const first = await serve();
  const postgres = await postmasterPid();
  assert.equal(await signal(first, 'SIGKILL'), null);
  assert.ok(alive(postgres), 'postgres survives the SIGKILL of its svc');

  const second = await serve();
  assert.match(second.output(), /embedded postgres already running; attaching/);
  assert.equal(await postmasterPid(), postgres, 'the second svc attached to the same server');
  assert.equal(await signal(second, 'SIGTERM'), 0);
  assert.ok(await until(() => !alive(postgres)), `postgres ${postgres} still running`);
});

test('issue 18 item 10: while another svc on the same data directory is alive, a clean stop leaves postgres running; the last one out stops it', async () => {
  const owner = await serve();
  const postgres = await postmasterPid();
  const other = await serve();
  assert.match(other.output(), /embedded postgres already running; attaching/);

  assert.equal(await signal(owner, 'SIGTERM'), 0);
  assert.ok(alive(postgres), 'still used by the other svc');
  assert.equal((await fetch(`${other.url}/healthz`)).status, 200);

  assert.equal(await signal(other, 'SIGTERM'), 0);
  assert.ok(await until(() => !alive(postgres)), `postgres ${postgres} still running`);
});
