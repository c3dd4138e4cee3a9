import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TSchema } from 'typebox';
import { SystemValues } from '../../contracts/system-values.ts';
import { TenantValues } from '../../contracts/tenant-values.ts';
import { assetPath } from '../assets/index.ts';

/**
 * One source for package values (issue: "generate the schema from the TypeBox definition"):
 * each chart's `values.schema.json` is this TypeBox schema serialised. `npm run charts:schema`
 * writes them; test/charts/schema-drift.test.ts fails when a committed file differs.
 */
export const CHART_SCHEMAS: ReadonlyArray<{ chart: string; schema: TSchema }> = [
  { chart: 'svc-tenant', schema: TenantValues },
  { chart: 'svc-system', schema: SystemValues },
];

const chartsDir = assetPath('charts');

export function schemaPath(chart: string): string {
  return path.join(chartsDir, chart, 'values.schema.json');
}

/** Draft 7 is the newest dialect Helm's validator and every editor agree on. */
export function renderSchema(schema: TSchema): string {
  const document = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    ...structuredClone(schema),
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}

export async function writeChartSchemas(): Promise<string[]> {
  const written: string[] = [];
  for (const { chart, schema } of CHART_SCHEMAS) {
    await writeFile(schemaPath(chart), renderSchema(schema));
    written.push(schemaPath(chart));
  }
  return written;
}

export async function readChartSchema(chart: string): Promise<string> {
  return readFile(schemaPath(chart), 'utf8');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const path of await writeChartSchemas()) console.log(`wrote ${path}`);
}
