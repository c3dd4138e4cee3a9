import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every problem code the server can answer with, as written in the source. */
async function codesInSource(): Promise<Map<string, number>> {
  const codes = new Map<string, number>();
  const entries = await readdir(path.join(ROOT, 'src'), { withFileTypes: true, recursive: true });
  for (const e of entries.filter((x) => x.isFile() && x.name.endsWith('.ts'))) {
    const text = await readFile(path.join(e.parentPath, e.name), 'utf8');
    for (const m of text.matchAll(/(?:ProblemError\(|problem\(\s*c,)\s*(\d{3}),\s*'([a-z_]+)'/g)) {
      codes.set(m[2] ?? '', Number(m[1]));
    }
  }
  return codes;
}

test('§7 every problem code the server uses is documented in docs/errors.md with its status', async () => {
  const doc = await readFile(path.join(ROOT, 'docs/errors.md'), 'utf8');
  const documented = new Map(
    [...doc.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)].map((m) => [m[2] ?? '', Number(m[1])]),
  );
  const source = await codesInSource();
  assert.ok(source.size >= 20, `found only ${source.size} codes in src/`);
  const missing = [...source].filter(([code, status]) => documented.get(code) !== status);
  assert.deepEqual(missing, []);
});
