// Spec §9.2 item 3 / issue 32: release notes state the supported tenant-package ranges and the
// compatibility matrix, and agree with `svc --version` (both read the files svc carries).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { notesFor, range, renderNotes } from '../../scripts/release/notes.ts';
import { versionReport } from '../../src/app/version.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

test('§9.2 the notes of this tree name the versions `svc --version` prints and its tenant ranges', async () => {
  const notes = await notesFor();
  const report = versionReport().trim().split('\n');
  const svc = /^svc (\S+)$/.exec(report[0] ?? '')?.[1];
  const system = /^svc-system chart (\S+)$/.exec(report[1] ?? '')?.[1];
  assert.ok(svc && system, report.join('\n'));
  assert.match(notes, new RegExp(`^# svc ${svc}$`, 'm'));
  assert.match(notes, new RegExp(`^- svc-system chart ${system}$`, 'm'));
  const runs = report.slice(2).map((line) => {
    const m = /^svc-tenant chart (\S+) \((supported|deprecated)\)$/.exec(line);
    assert.ok(m, line);
    return { version: m[1] as string, status: m[2] as string };
  });
  assert.ok(runs.length > 0);
  for (const status of ['supported', 'deprecated']) {
    const versions = runs.filter((r) => r.status === status).map((r) => r.version);
    const line = notes.split('\n').find((l) => l.startsWith(`- ${status}`));
    assert.ok(line, status);
    assert.ok(line.endsWith(`: ${range(versions)}`), `${line} vs ${versions.join(', ')}`);
    for (const v of versions)
      assert.match(notes, new RegExp(`^\\| ${svc} \\| ${v} \\| ${status} \\|`, 'm'));
  }
});

test('§9.2 ranges per status, out-of-range said, and the matrix newest first', () => {
  const notes = renderNotes({
    version: '0.3.0',
    systemChart: '0.3.0',
    tenantChart: '0.4.0',
    matrix: [
      { system: '0.2.0', tenant: [{ version: '0.2.0', status: 'supported' }] },
      {
        system: '0.3.0',
        tenant: [
          { version: '0.4.0', status: 'supported' },
          { version: '0.10.0', status: 'supported' },
          { version: '0.3.0', status: 'supported' },
          { version: '0.2.0', status: 'deprecated', notes: 'indexer 4.8' },
          { version: '0.1.0', status: 'blocked' },
        ],
      },
    ],
  });
  assert.match(notes, /^- supported: 0\.3\.0 – 0\.10\.0 \(0\.3\.0, 0\.4\.0, 0\.10\.0\)$/m);
  assert.match(notes, /^- deprecated \(runs, upgrade advised\): 0\.2\.0$/m);
  assert.match(notes, /^- blocked \(refused\): 0\.1\.0$/m);
  assert.match(notes, /out of range and refused/);
  const rows = notes.split('\n').filter((l) => /^\| \d/.test(l));
  assert.deepEqual(rows, [
    '| 0.3.0 | 0.10.0 | supported |  |',
    '| 0.3.0 | 0.4.0 | supported |  |',
    '| 0.3.0 | 0.3.0 | supported |  |',
    '| 0.3.0 | 0.2.0 | deprecated | indexer 4.8 |',
    '| 0.3.0 | 0.1.0 | blocked |  |',
    '| 0.2.0 | 0.2.0 | supported |  |',
  ]);
  const none = renderNotes({
    version: '9.9.9',
    systemChart: '9.9.9',
    tenantChart: '1.0.0',
    matrix: [],
  });
  assert.match(none, /^- supported: none$/m);
});

test('§9.2 the script: notes with the checksums, and a bad argument exits 2', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-notes-'));
  try {
    const sums = path.join(dir, 'SHA256SUMS');
    await writeFile(sums, `${'0'.repeat(64)}  svc-linux-x64\n`);
    const script = path.join(ROOT, 'scripts', 'release', 'notes.ts');
    const ok = await run(process.execPath, ['--import', 'tsx', script, '--checksums', sums], {
      cwd: ROOT,
    });
    assert.match(ok.stdout, /## SHA256SUMS\n\n```\n0{64} {2}svc-linux-x64\n```\n$/);
    const bad = await run(process.execPath, ['--import', 'tsx', script, '--draft'], {
      cwd: ROOT,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown argument --draft/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
