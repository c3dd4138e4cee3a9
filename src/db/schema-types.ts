import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { generate } from 'zapatos/generate';
import { startScratchDatabase } from './scratch.ts';
import { clientConfig } from './target.ts';

/** Committed location of the generated types; test/db/schema-types.test.ts checks drift. */
export const SCHEMA_TYPES_DIR = fileURLToPath(new URL('.', import.meta.url));

/** Writes zapatos/schema.d.ts under outDir from the live, migrated schema. */
export async function generateSchemaTypes(db: pg.ClientConfig, outDir: string): Promise<void> {
  await generate({
    db,
    outDir,
    schemas: { public: { include: '*', exclude: ['schema_migrations', 'schema_seeds'] } },
    progressListener: false,
    warningListener: false,
  });
}

if (import.meta.main) {
  const scratch = await startScratchDatabase();
  try {
    await generateSchemaTypes(clientConfig(scratch.target, 'admin'), SCHEMA_TYPES_DIR);
    console.log('wrote src/db/zapatos/schema.d.ts');
  } finally {
    await scratch.stop();
  }
}
