import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * DESIGN "Inside src/": compose.ts builds the object graph once. The LLM service keeps state
 * (each tenant's API key, cached for a minute), so `svc serve` holds one: the API's, which its
 * in-process workers reuse instead of composing a second copy.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

async function programFiles(rel: string): Promise<{ file: string; text: string }[]> {
  const out: { file: string; text: string }[] = [];
  for (const entry of await readdir(path.join(ROOT, rel), { withFileTypes: true })) {
    const child = `${rel}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await programFiles(child)));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      out.push({ file: child, text: await readFile(path.join(ROOT, child), 'utf8') });
    }
  }
  return out;
}

/** `file: n` for each file calling `createLlmService(` (its own definition not counted). */
function llmCompositions(files: { file: string; text: string }[]): string[] {
  return files.flatMap(({ file, text }) => {
    const calls = text
      .replace(/export function createLlmService\(/g, '')
      .match(/\bcreateLlmService\(/g);
    return calls ? [`${file}: ${calls.length}`] : [];
  });
}

test('DESIGN layout: src/ composes the LLM service in one place, src/app/compose.ts', async () => {
  assert.deepEqual(llmCompositions(await programFiles('src')), ['src/app/compose.ts: 1']);
});

test('DESIGN layout: the LLM check counts every composition', () => {
  const found = llmCompositions([
    { file: 'src/a.ts', text: 'const llm = createLlmService({ db });' },
    { file: 'src/b.ts', text: 'x(createLlmService(deps)); y(createLlmService(deps));' },
    { file: 'src/c.ts', text: 'export function createLlmService(deps: LlmServiceDeps) {}' },
  ]);
  assert.deepEqual(found, ['src/a.ts: 1', 'src/b.ts: 2']);
});

test('DESIGN layout: svc serve hands the API’s LLM service to its in-process workers', async () => {
  const serve = await readFile(path.join(ROOT, 'src/cli/serve.ts'), 'utf8');
  assert.match(serve, /composeWorkers\(core, \{\s*pipeline: \{ llm: api\.services\.llm \}\s*\}\)/);
});
