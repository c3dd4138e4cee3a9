import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * A comment in the program says why by naming the spec clause or the doc that holds the rule:
 * "issue 15 item 3" means nothing to the next reader, who has the spec and docs/ but not the
 * tracker. Read from the source of src/, contracts/ and web/.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true })) {
    const child = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (entry.name !== 'dist' && entry.name !== 'zapatos') out.push(...(await files(child)));
    } else if (/\.tsx?$/.test(entry.name)) out.push(child);
  }
  return out;
}

/** The lines of `text` that name a tracker issue: "issue 18", "issues 13 and 14", "issue #4". */
export function issueReferences(text: string): string[] {
  return text.split('\n').filter((line) => /\bissues?\s+#?\d/i.test(line));
}

test('comments name the spec clause or the doc, never a tracker issue number', async () => {
  const offenders: string[] = [];
  for (const dir of ['src', 'contracts', 'web']) {
    for (const file of await files(dir)) {
      const text = await readFile(path.join(ROOT, file), 'utf8');
      for (const line of issueReferences(text)) offenders.push(`${file}: ${line.trim()}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test('the check finds the forms an issue number takes, and leaves clauses and docs alone', () => {
  const found = issueReferences(
    [
      '// issue 15: a suspended tenant',
      ' * (Issue 18 item 7) the reconcile pass',
      '/** issues 13 and 14 */',
      '// see issue #4',
      '// spec §3.1 leaves it open (docs/operations.md "Suspension")',
      '// an issuer 12 hours later',
      '// the issue of a token',
    ].join('\n'),
  );
  assert.equal(found.length, 4);
});
