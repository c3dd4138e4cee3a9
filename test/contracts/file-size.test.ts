import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const CONTRACTS = path.join(import.meta.dirname, '../../contracts');
const MAX_LINES = 400;

/**
 * A family grows one resource file at a time (contracts/mssp/<resource>.ts beside its router in
 * src/http/mssp/), so no contract file becomes the one everybody edits at once.
 */
test(`every contracts/ file stays within ${MAX_LINES} lines`, async () => {
  const entries = await readdir(CONTRACTS, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile() && e.name.endsWith('.ts'));
  assert.ok(files.length > 0, 'the contracts folder was found');
  const over: string[] = [];
  for (const e of files) {
    const file = path.join(e.parentPath, e.name);
    const text = await readFile(file, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_LINES) over.push(`${path.relative(CONTRACTS, file)}: ${lines} lines`);
  }
  assert.deepEqual(over, []);
});
