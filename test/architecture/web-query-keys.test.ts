import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { msspKeys } from '../../web/mssp/query-keys.ts';

/**
 * docs/web.md "Adding a page", step 1: the MSSP console spells its TanStack Query keys in one
 * module, web/mssp/query-keys.ts; pages, mutations and event hooks call its factories. An array
 * written inline where a key goes is how a page and the mutation meant to refresh it drift apart.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KEY_MODULE = 'web/mssp/query-keys.ts';

/** The first element of every key the module makes ('mssp', 'as'): the roots it owns. */
function keyRoots(): string[] {
  const roots = new Set<string>();
  const visit = (key: readonly unknown[]) => {
    if (Array.isArray(key[0])) for (const k of key) visit(k as unknown[]);
    else if (typeof key[0] === 'string') roots.add(key[0]);
  };
  for (const factory of Object.values(msspKeys) as ((arg: never) => readonly unknown[])[]) {
    visit(factory('00000000-0000-4000-8000-000000000000' as never));
  }
  return [...roots].sort();
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Where `text` writes a query key inline: an array as (or in a branch of) a `queryKey` value,
 * as the key argument of the query client's positional methods, or any array literal opening
 * with one of the key roots (`const key = ['mssp', …]`, a key list for the event hook).
 * Comments are dropped first: prose may quote a key.
 */
function inlineKeys(text: string, roots: readonly string[]): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const patterns = [
    /queryKey\s*:\s*(?:[^,}\n]*[?:]\s*)?\[[^\]\n]*\]?/g,
    /\b(?:setQueryData|getQueryData|getQueryState)\s*(?:<[^>]*>)?\(\s*\[[^\]\n]*\]?/g,
    new RegExp(`\\[\\s*['"\`](?:${roots.map(escapeRegExp).join('|')})['"\`][^\\]\\n]*\\]?`, 'g'),
  ];
  const found = new Set<string>();
  for (const pattern of patterns) for (const m of code.matchAll(pattern)) found.add(m[0].trim());
  return [...found];
}

async function consoleSources(): Promise<{ file: string; text: string }[]> {
  const out: { file: string; text: string }[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) await walk(child);
      else if (/\.tsx?$/.test(entry.name) && child !== KEY_MODULE) {
        out.push({ file: child, text: await readFile(path.join(ROOT, child), 'utf8') });
      }
    }
  };
  await walk('web/mssp');
  return out;
}

test('docs/web.md query keys: the key module owns the roots mssp and as', () => {
  assert.deepEqual(keyRoots(), ['as', 'mssp']);
});

test('docs/web.md query keys: web/mssp writes no query key inline outside web/mssp/query-keys.ts', async () => {
  const roots = keyRoots();
  const sources = await consoleSources();
  assert.ok(sources.some((f) => f.file === 'web/mssp/TenantPage.tsx'));
  const offenders = sources.flatMap((f) =>
    inlineKeys(f.text, roots).map((key) => `${f.file}: ${key}`),
  );
  assert.deepEqual(offenders, []);
});

test('docs/web.md query keys: the check finds each inline form and passes the factories', () => {
  const roots = keyRoots();
  const inline = [
    "useQuery({ queryKey: ['mssp', 'fleet'], queryFn })",
    'useQuery({ queryKey: [...BASE, id], queryFn })',
    "useQuery({ queryKey: id ? ['x', id] : msspKeys.users(), queryFn })",
    "queries.invalidateQueries({ queryKey: ['mssp', 'tenants'] })",
    "queries.removeQueries({ queryKey: ['as', id] })",
    "queries.setQueryData(['mssp', 'policy', id], saved)",
    'queries.getQueryData<Policy>([POLICY, id])',
    "const key = ['mssp', 'reviews', id];",
    "useTenantEvents(url, [key, ['mssp', 'fleet']])",
    'const key = ["as", id, `audit`];',
  ];
  for (const line of inline) assert.notDeepEqual(inlineKeys(line, roots), [], line);
  const factories = [
    'useQuery({ queryKey: msspKeys.fleet(), queryFn })',
    'useQuery({ queryKey: id ? msspKeys.tenantUsers(id) : msspKeys.users(), queryFn })',
    'for (const queryKey of msspKeys.tenantChanged(id)) void queries.invalidateQueries({ queryKey });',
    'queries.setQueryData(msspKeys.policy(id), saved)',
    "useTenantEvents(url, [key, msspKeys.fleet()], ['tenant.provisioned'])",
    "const roles = ['platform_admin', 'mssp_admin'];",
    "/** A key such as ['mssp', 'fleet'] is made by web/mssp/query-keys.ts. */",
    "// ['mssp', 'fleet']",
  ];
  for (const line of factories) assert.deepEqual(inlineKeys(line, roots), [], line);
});
