import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Hono } from 'hono';
import type { Identity } from '../../src/auth/identity.ts';
import { DomainError } from '../../src/domains/domain-error.ts';
import { TenantNotFoundError } from '../../src/domains/tenants/tenant-types.ts';
import { domainProblem, hasProblemRow } from '../../src/http/domain-problems.ts';

/**
 * DESIGN.md "Domain errors carry stable codes, mapped to problems in one table": every error a
 * domain raises on purpose is a DomainError, src/http/domain-problems.ts has its row, and its
 * code is a documented problem (docs/errors.md). Read from the source, so a new error class
 * that no row answers (a 500 `internal` waiting to happen) fails here, not in production.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Errors under src/domains that never become an answer, each caught inside svc: a job retries
 * on them or the orchestrator records them.
 */
const INTERNAL_ERRORS = new Map([
  // The projector runs a moment behind the events: the pipeline job fails this attempt and retries.
  ['ProjectionLagError', 'src/domains/pipeline/pipeline-types.ts'],
  // A review the act step cannot use: the pipeline job's own failure, never a request's.
  ['ReviewNotActionableError', 'src/domains/pipeline/pipeline-types.ts'],
  // A stored redaction pattern that no longer compiles: the pipeline refuses to send, and says so.
  ['InvalidRedactionPatternError', 'src/domains/pipeline/redaction.ts'],
  // A second projector writer: the fold rolls back and runs again.
  ['CheckpointConflictError', 'src/domains/projections/projection-types.ts'],
  // Optimistic append: the writer reads the stream again.
  ['StreamConflictError', 'src/domains/events/event-repository.ts'],
  // The values renderer's refusal, turned into ConfigInvalidError's problems (tenant-config.ts).
  ['RenderError', 'src/domains/tenants/tenant-types.ts'],
  // A quantity the contract's grammar let through but the arithmetic cannot hold: its message
  // becomes one of ConfigInvalidError's problems.
  ['QuantityError', 'src/domains/tenants/quantity.ts'],
]);

interface DomainSource {
  file: string;
  text: string;
}

async function domainSources(): Promise<DomainSource[]> {
  const dir = path.join(ROOT, 'src/domains');
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  const files = entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
  return Promise.all(
    files.map(async (file) => ({ file, text: await readFile(path.join(ROOT, file), 'utf8') })),
  );
}

/** The body of `class <name>` in a file's text: up to the first line that is a lone `}`. */
function classBody(text: string, name: string): string {
  const start = text.search(new RegExp(`class ${name} extends`));
  const end = text.indexOf('\n}', start);
  return text.slice(start, end);
}

/** The codes a DomainError subclass can carry: its `code` initializer or its literal union. */
function declaredCodes(body: string): string[] {
  const declaration = /readonly code\b\s*(?::([^;=]+))?(?:=\s*'([a-z_]+)')?/.exec(body);
  if (!declaration) return [];
  const literals = [...(declaration[1] ?? '').matchAll(/'([a-z_]+)'/g)].map((m) => m[1] ?? '');
  return [...new Set([...literals, ...(declaration[2] ? [declaration[2]] : [])])];
}

const sources = await domainSources();

/** Every class under src/domains whose prototype chain reaches DomainError, with its file. */
async function domainErrorClasses(): Promise<Map<string, { cls: unknown; file: string }>> {
  const found = new Map<string, { cls: unknown; file: string }>();
  for (const { file } of sources) {
    const module = (await import(pathToFileURL(path.join(ROOT, file)).href)) as Record<
      string,
      unknown
    >;
    for (const [name, value] of Object.entries(module)) {
      if (typeof value !== 'function' || value === DomainError) continue;
      if (value.prototype instanceof DomainError) found.set(name, { cls: value, file });
    }
  }
  return found;
}

test('DESIGN domain errors: every error class under src/domains is a DomainError or a named internal one', () => {
  const plain = sources
    .filter(({ file }) => file !== 'src/domains/domain-error.ts')
    .flatMap(({ file, text }) =>
      [...text.matchAll(/class (\w+) extends Error\b/g)].map((m) => `${m[1]} (${file})`),
    );
  const expected = [...INTERNAL_ERRORS].map(([name, file]) => `${name} (${file})`);
  assert.deepEqual(plain.sort(), expected.sort());
});

test('DESIGN domain errors: every DomainError subclass has a row in the one problem table', async () => {
  const classes = await domainErrorClasses();
  assert.ok(classes.size >= 35, `found only ${classes.size} DomainError classes`);
  const missing = [...classes]
    .filter(([, { cls }]) => !hasProblemRow(cls as typeof DomainError))
    .map(([name, { file }]) => `${name} (${file})`);
  assert.deepEqual(missing, []);
});

test('DESIGN domain errors: a DomainError subclass without a row is reported missing', () => {
  class UnlistedError extends DomainError {
    readonly code = 'unlisted';
  }
  assert.equal(hasProblemRow(UnlistedError), false);
});

test('§7 every DomainError code is a problem documented in docs/errors.md', async () => {
  const doc = await readFile(path.join(ROOT, 'docs/errors.md'), 'utf8');
  const documented = new Set([...doc.matchAll(/^\| \d{3} \| `([a-z_]+)` \|/gm)].map((m) => m[1]));
  const classes = await domainErrorClasses();
  const undocumented: string[] = [];
  for (const [name, { file }] of classes) {
    const text = sources.find((s) => s.file === file)?.text ?? '';
    const codes = declaredCodes(classBody(text, name));
    if (codes.length === 0) undocumented.push(`${name}: no literal code`);
    for (const code of codes) if (!documented.has(code)) undocumented.push(`${name}: ${code}`);
  }
  assert.deepEqual(undocumented, []);
});

test('docs/errors.md tenant_not_found: a customer whose own tenant is gone is told so; staff naming one get "No such tenant"', async () => {
  const tenantId = '00000000-0000-4000-8000-000000000001';
  const app = new Hono();
  app.get('/as/:tenant', (c) => {
    c.set('identity', {
      tenant_id: c.req.param('tenant') === 'none' ? null : tenantId,
    } as Identity);
    throw new TenantNotFoundError(tenantId);
  });
  app.onError((error, c) => c.json(domainProblem(error, c) ?? null));
  const own = await (await app.request('/as/own')).json();
  assert.deepEqual(own, {
    code: 'tenant_not_found',
    status: 404,
    title: 'Your tenant no longer exists',
  });
  const named = await (await app.request('/as/none')).json();
  assert.deepEqual(named, { code: 'tenant_not_found', status: 404, title: 'No such tenant' });
});
