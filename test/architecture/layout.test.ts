import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The layout rules of DESIGN.md "Inside src/", read from the source: SQL only in repositories
 * and src/db, the edges never reach into the database layer, domains never into HTTP, the
 * contracts never into the program, no import cycle between folders, and one composition root.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface SourceFile {
  /** Relative to the project root, with forward slashes. */
  file: string;
  text: string;
  /** Project-relative paths of the files it imports (relative specifiers only). */
  imports: string[];
}

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|^import\s+['"](\.{1,2}\/[^'"]+)['"]/gm;

async function sources(dir: string): Promise<SourceFile[]> {
  const out: SourceFile[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) await walk(child);
      else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
        const text = await readFile(path.join(ROOT, child), 'utf8');
        const imports = [...text.matchAll(IMPORT)].map((m) => {
          const spec = m[1] ?? m[2] ?? m[3] ?? '';
          return path.posix.normalize(path.posix.join(path.posix.dirname(child), spec));
        });
        out.push({ file: child, text, imports });
      }
    }
  };
  await walk(dir);
  return out;
}

const src = await sources('src');
const under = (file: string, folder: string) => file.startsWith(`${folder}/`);
const violations = (pairs: [string, string][]) => pairs.map(([a, b]) => `${a} → ${b}`);

test('DESIGN layout: SQL (`.query(`) only in *-repository.ts files and src/db/', () => {
  const offenders = src
    .filter((f) => !under(f.file, 'src/db') && !f.file.endsWith('-repository.ts'))
    .filter((f) => /(?<!req)\.query\s*(<[^>]*>)?\s*\(/.test(f.text))
    .map((f) => f.file);
  assert.deepEqual(offenders, []);
});

test('DESIGN layout: src/http, src/cli and src/workers never import src/db', () => {
  const edges: [string, string][] = src
    .filter((f) => ['src/http', 'src/cli', 'src/workers'].some((d) => under(f.file, d)))
    .flatMap((f) =>
      f.imports.filter((i) => under(i, 'src/db')).map((i): [string, string] => [f.file, i]),
    );
  assert.deepEqual(violations(edges), []);
});

test('DESIGN layout: src/domains never import src/http', () => {
  const edges: [string, string][] = src
    .filter((f) => under(f.file, 'src/domains'))
    .flatMap((f) =>
      f.imports.filter((i) => under(i, 'src/http')).map((i): [string, string] => [f.file, i]),
    );
  assert.deepEqual(violations(edges), []);
});

test('DESIGN layout: contracts/ import only contracts/ and libraries', async () => {
  const edges: [string, string][] = (await sources('contracts')).flatMap((f) =>
    f.imports.filter((i) => !under(i, 'contracts')).map((i): [string, string] => [f.file, i]),
  );
  assert.deepEqual(violations(edges), []);
});

test('DESIGN layout: web/ imports only web/, contracts/ and libraries, and its pages no Node built-ins', async () => {
  const web = await sources('web');
  assert.ok(web.some((f) => f.file === 'web/shared/api.ts'));
  const edges: [string, string][] = web.flatMap((f) =>
    f.imports
      .filter((i) => !under(i, 'web') && !under(i, 'contracts'))
      .map((i): [string, string] => [f.file, i]),
  );
  // web/vite.config.ts and web/budget.ts run in Node at build time; the apps run in a browser.
  const browser = web.filter((f) => f.file.split('/').length > 2);
  for (const f of browser) {
    if (/from\s*['"]node:/.test(f.text)) edges.push([f.file, 'node:*']);
  }
  assert.deepEqual(violations(edges), []);
});

/** Strongly connected components of the folder graph with more than one folder (Tarjan). */
function folderCycles(files: SourceFile[]): string[][] {
  const graph = new Map<string, Set<string>>();
  for (const f of files) {
    const from = path.posix.dirname(f.file);
    const to = graph.get(from) ?? new Set<string>();
    graph.set(from, to);
    for (const i of f.imports) {
      const folder = path.posix.dirname(i);
      if (folder !== from && under(i, 'src')) to.add(folder);
    }
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let counter = 0;
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w === undefined) break;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

test('DESIGN layout: no import cycle between folders of src/', () => {
  assert.deepEqual(folderCycles(src), []);
});

test('DESIGN layout: the cycle check finds a cycle when one exists', () => {
  const fake = (file: string, imports: string[]): SourceFile => ({ file, text: '', imports });
  const cycles = folderCycles([
    fake('src/a/x.ts', ['src/b/y.ts']),
    fake('src/b/y.ts', ['src/c/z.ts']),
    fake('src/c/z.ts', ['src/a/x.ts']),
    fake('src/d/w.ts', ['src/a/x.ts']),
  ]);
  assert.deepEqual(cycles, [['src/a', 'src/b', 'src/c']]);
});

/** The parts only the composition root assembles: a second copy of the wiring is a defect. */
const WIRING =
  /\b(createApp|createAppDatabase|createSystemGate|createEventHub|createAuthService|createOrchestrator)\(/;

test('DESIGN layout: one composition root — src/ and bench/ build the object graph only in src/app/', async () => {
  const files = [...src, ...(await sources('bench'))];
  const offenders = files
    .filter((f) => !under(f.file, 'src/app') && WIRING.test(f.text))
    .filter(
      (f) => !new RegExp(`export (async )?function ${WIRING.exec(f.text)?.[1]}\\b`).test(f.text),
    )
    .map((f) => `${f.file}: ${WIRING.exec(f.text)?.[1]}`);
  assert.deepEqual(offenders, []);
});

test('DESIGN layout: no utils, helpers, common or misc drawers', () => {
  const drawers = src.filter((f) => /\/(utils?|helpers?|common|misc)(\/|\.ts$)/.test(f.file));
  assert.deepEqual(
    drawers.map((f) => f.file),
    [],
  );
});

/**
 * DESIGN "Inside src/": the orchestrator is the loop, the locks and the cluster calls; what it
 * records goes through the provisioning service (docs/orchestrator.md "Provisioning service").
 * From src/db it may only take the connection target of the pools it owns: the session locks
 * (tenant-locks.ts) and the install record written as svc_admin (install.ts).
 */
const ORCHESTRATOR_DB_PRIMITIVES: Record<string, string[]> = {
  'src/orchestrator/tenant-locks.ts': ['src/db/target.ts'],
  'src/orchestrator/install.ts': ['src/db/target.ts'],
};

test('DESIGN layout: src/orchestrator imports no repository and from src/db only the pool primitives it owns', () => {
  const edges: [string, string][] = src
    .filter((f) => under(f.file, 'src/orchestrator'))
    .flatMap((f) =>
      f.imports
        .filter((i) => i.endsWith('-repository.ts') || under(i, 'src/db'))
        .filter((i) => !(ORCHESTRATOR_DB_PRIMITIVES[f.file] ?? []).includes(i))
        .map((i): [string, string] => [f.file, i]),
    );
  assert.deepEqual(violations(edges), []);
});

/** Files importing the state machine's transition functions (tenant-lifecycle.ts). */
function transitionCallers(files: SourceFile[]): string[] {
  const named =
    /import\s*\{([^}]*)\}\s*from\s*['"][^'"]*tenants\/tenant-lifecycle\.ts['"]|import\s*\{([^}]*)\}\s*from\s*['"]\.\/tenant-lifecycle\.ts['"]/g;
  return files
    .filter((f) => f.file !== 'src/domains/tenants/tenant-lifecycle.ts')
    .filter((f) =>
      [...f.text.matchAll(named)].some((m) =>
        /\b(transition|tryTransition)\b/.test(m[1] ?? m[2] ?? ''),
      ),
    )
    .map((f) => f.file);
}

test('DESIGN layout: every tenant state transition is made by src/domains/provisioning', () => {
  const callers = transitionCallers(src).filter((f) => !under(f, 'src/domains/provisioning'));
  assert.deepEqual(callers, []);
  assert.ok(
    transitionCallers(src).some((f) => f === 'src/domains/provisioning/provisioning-service.ts'),
    'the provisioning service makes the transitions',
  );
});

test('DESIGN layout: the transition guard sees transition() and tryTransition() imports, not the rest', () => {
  const fake = (file: string, text: string): SourceFile => ({ file, text, imports: [] });
  const files = [
    fake('src/a.ts', "import { transition } from '../domains/tenants/tenant-lifecycle.ts';"),
    fake(
      'src/b.ts',
      "import {\n  lockTenant,\n  tryTransition,\n} from '../tenants/tenant-lifecycle.ts';",
    ),
    fake('src/c.ts', "import { lockTenant, transitionFor } from '../tenants/tenant-lifecycle.ts';"),
  ];
  assert.deepEqual(transitionCallers(files), ['src/a.ts', 'src/b.ts']);
});
