// The "Catalog" section of docs/events.md, rendered from the event catalog (contracts/events.ts):
// test/events/catalog.test.ts fails when the doc and the catalog differ, and
// `npx tsx scripts/event-catalog.ts --write` rewrites the section.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TSchema } from 'typebox';
import { EVENT_CATALOG, EVENT_TYPES } from '../contracts/events.ts';

const DOC = fileURLToPath(new URL('../docs/events.md', import.meta.url));
const HEADING = '## Catalog';

interface ObjectSchema {
  properties?: Record<string, unknown>;
  required?: string[];
  anyOf?: unknown[];
}

/** The payload's fields, `?` marking an optional one; a union lists each variant. */
function fields(schema: TSchema): string {
  const s = schema as ObjectSchema;
  if (s.anyOf) return s.anyOf.map((variant) => fields(variant as TSchema)).join(' **or** ');
  const required = new Set(s.required ?? []);
  return Object.entries(s.properties ?? {})
    .map(([name, property]) => {
      const constant = (property as { const?: unknown }).const;
      const shown = typeof constant === 'string' ? `${name}: '${constant}'` : name;
      return `\`${shown}${required.has(name) ? '' : '?'}\``;
    })
    .join(', ');
}

export function catalogSection(): string {
  const rows = EVENT_TYPES.map((type) => {
    const entry = EVENT_CATALOG[type];
    return `| \`${type}\` | ${entry.stream} | ${entry.writer} | ${entry.description} | ${fields(entry.payload)} |`;
  });
  return [
    HEADING,
    '',
    '<!-- Rendered from contracts/events.ts by scripts/event-catalog.ts; test/events/catalog.test.ts compares. -->',
    '',
    'Every event type svc appends, one catalog (`EVENT_CATALOG` in `contracts/events.ts`): the',
    'type name, the stream it goes to, its writer, what it means and its payload (a TypeBox',
    'schema; fields marked `?` are optional). Payloads are closed, except the Wazuh document inside',
    '`alert.received`, which is stored as the adapter sent it. `appendEvent` and `appendToStream`',
    'take only a catalog type with its payload type, and the stream type that goes with it; the',
    'projections name the types they fold from it (`ProjectionModule.events`); the web app',
    'subscribes to every name (`contracts/event-types.ts`, the names without the schemas, so the',
    'bundle stays small). Ingest writes its payloads as JSON text by hand (one serialization per',
    'alert); the catalog test, not the hot path, checks them against the schemas.',
    '',
    '`test/events/catalog.test.ts` runs the pipeline and the analyst desk end to end and checks',
    'every stored event against its schema, scans `src/` and `web/` for event names the catalog',
    'lacks, and fails on a catalog type nothing writes. Rows written before a payload changed keep',
    'their shape: readers stay defensive (a fold skips what it cannot read). Adding a type is one',
    'name in `contracts/event-types.ts` and one entry in `EVENT_CATALOG`, then its writer.',
    '',
    '| type | stream | written by | meaning | payload |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

/** Replaces the section (up to the next `## ` heading), or adds it before "## Appending". */
function write(): void {
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf(`\n${HEADING}\n`);
  let next: string;
  if (start >= 0) {
    const end = doc.indexOf('\n## ', start + 1);
    next = `${doc.slice(0, start + 1)}${catalogSection()}${end >= 0 ? doc.slice(end) : ''}`;
  } else {
    const at = doc.indexOf('\n## Appending\n');
    if (at < 0)
      throw new Error('docs/events.md has no "## Appending" section to put the catalog before');
    next = `${doc.slice(0, at + 1)}${catalogSection()}${doc.slice(at)}`;
  }
  writeFileSync(DOC, next);
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--write')) write();
