import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked loosely, like kubectl does
export type Manifest = any;

const chart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));

/** The tenant chart as `helm template` renders it for the sample tenant in `namespace`. */
export async function renderTenantChart(namespace = 'tenant-acme'): Promise<Manifest[]> {
  const scratch = await mkdtemp(join(tmpdir(), 'svc-indexer-setup-'));
  const valuesFile = join(scratch, 'values.json');
  await writeFile(valuesFile, JSON.stringify(sampleTenantValues()));
  const { stdout } = await promisify(execFile)(
    'helm',
    ['template', 'svc-tenant', chart, '--namespace', namespace, '-f', valuesFile],
    { maxBuffer: 32 * 1024 * 1024 },
  ).finally(() => rm(scratch, { recursive: true, force: true }));
  return parseAllDocuments(stdout)
    .map((d) => d.toJS())
    .filter(Boolean);
}

/**
 * The indexer pod's setup ConfigMap (security-config.sh and the alert index files) written into
 * a fresh directory, as the kubelet would mount it; returns the directory (the caller removes it).
 */
export async function extractIndexerSetup(objects: Manifest[]): Promise<string> {
  const setup = objects.find(
    (o) => o.kind === 'ConfigMap' && o.metadata.name === 'monitor-indexer-setup',
  );
  if (!setup) throw new Error('the chart rendered no ConfigMap monitor-indexer-setup');
  const dir = await mkdtemp(join(tmpdir(), 'svc-indexer-setup-files-'));
  for (const [file, text] of Object.entries(setup.data as Record<string, string>)) {
    await writeFile(join(dir, file), text);
  }
  return dir;
}
