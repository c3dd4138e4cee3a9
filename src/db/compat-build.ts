import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseCompatList, renderCompatSql } from './compat.ts';
import { COMPAT_SQL, SQL_DIR } from './migrate.ts';

export const COMPAT_LIST = path.join(SQL_DIR, 'chart-compatibility.yaml');

export async function buildCompatSql(): Promise<string> {
  return renderCompatSql(parseCompatList(await readFile(COMPAT_LIST, 'utf8')));
}

if (import.meta.main) {
  await mkdir(path.dirname(COMPAT_SQL), { recursive: true });
  await writeFile(COMPAT_SQL, await buildCompatSql());
  console.log(`wrote ${path.relative(process.cwd(), COMPAT_SQL)}`);
}
