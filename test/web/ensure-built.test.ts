import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

// Issue 16 "the README's quick start on a clean machine": on Debian 12's own Node 18, npm
// install skips the web bundler's native binary and `npm start` died in a stack trace. The
// script now refuses in one line. It runs from a copy in a tree whose web/dist is up to date,
// so an accepted Node proceeds to "nothing to build" and exits 0 without building anything.

const SCRIPT = fileURLToPath(new URL('../../web/ensure-built.ts', import.meta.url));
let tree: string;

before(async () => {
  tree = await mkdtemp(path.join(tmpdir(), 'svc-ensure-built-'));
  await mkdir(path.join(tree, 'web/dist/.vite'), { recursive: true });
  await copyFile(SCRIPT, path.join(tree, 'web/ensure-built.ts'));
  await writeFile(path.join(tree, 'web/dist/.vite/manifest.json'), '{}');
});
after(() => rm(tree, { recursive: true, force: true }));

function runUnderNpm(nodeVersion: string): { status: number | null; stderr: string } {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(tree, 'web/ensure-built.ts')],
    {
      encoding: 'utf8',
      env: {
        ...process.env,
        npm_config_user_agent: `npm/9.2.0 node/${nodeVersion} linux x64 workspaces/false`,
      },
    },
  );
  return { status: result.status, stderr: result.stderr };
}

describe('web/ensure-built.ts: the Node that npm runs on', () => {
  for (const version of ['v18.20.4', 'v20.18.3', 'v21.7.3', 'v22.11.0']) {
    test(`npm on Node ${version} is refused in one line, exit 1, nothing built`, () => {
      const { status, stderr } = runUnderNpm(version);
      assert.equal(status, 1);
      assert.equal(
        stderr,
        `svc: npm runs on Node ${version}; svc needs Node 20.19+ (or 22.12+) for npm install. ` +
          'Install a newer Node, then: rm -rf node_modules && npm install\n',
      );
    });
  }

  for (const version of ['v20.19.0', 'v20.20.2', 'v22.12.0', 'v24.11.1']) {
    test(`npm on Node ${version} is accepted (an up-to-date build: exit 0, silent)`, () => {
      const { status, stderr } = runUnderNpm(version);
      assert.equal(stderr, '');
      assert.equal(status, 0);
    });
  }
});
