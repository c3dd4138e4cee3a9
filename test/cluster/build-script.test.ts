import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const buildScript = fileURLToPath(new URL('../../testcluster/build.sh', import.meta.url));

test('harness: build.sh on a cold cache without Go fails with one line naming Go', (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'svc-build-cache-'));
  t.after(() => rmSync(cache, { recursive: true, force: true }));
  // A PATH with just the tools the script needs before it looks for Go, wherever Go is installed.
  const bin = join(cache, 'bin');
  mkdirSync(bin);
  for (const tool of ['bash', 'cat', 'cut', 'dirname', 'sed', 'sha256sum']) {
    symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
  }
  const result = spawnSync('/usr/bin/bash', [buildScript], {
    encoding: 'utf8',
    env: { PATH: bin, HOME: cache, XDG_CACHE_HOME: cache },
  });
  assert.notEqual(result.status, 0);
  assert.equal(result.stdout, '');
  const lines = result.stderr.trim().split('\n');
  assert.equal(lines.length, 1);
  assert.match(lines[0] ?? '', /Go >= 1\.26 is required/);
});
