import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

// Renders charts/svc-system the way an operator does (`helm template -f values.yaml`), for the
// admission-policy tests (whose manifests now come only from the chart), the chart tests and
// the demo's install identity (testcluster/install-identity.ts).

const run = promisify(execFile);

export const systemChart = fileURLToPath(new URL('../charts/svc-system', import.meta.url));

export type Values = { [key: string]: unknown };

/** The keys §2.9 gives no default, filled in for an install living in `namespace`. */
export function sampleValues(
  namespace: string,
  ids: { msspId?: string; installId?: string } = {},
): Values {
  return {
    install: {
      msspId: ids.msspId ?? '3f2a1c4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b',
      msspName: 'Example Security',
      installId: ids.installId ?? '9b1c2d3e-4f5a-4b6c-8d7e-8f9a0b1c2d3e',
      installLabel: 'test',
      namespace,
    },
    image: { registry: 'registry.example.com/svc' },
    ingress: { hostnames: { mssp: 'mssp.example.com', customer: '*.customers.example.com' } },
  };
}

function isObject(value: unknown): value is Values {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Helm's coalescing: maps merge key by key, anything else replaces, null deletes the key. */
export function mergeValues(base: Values, override: Values): Values {
  const merged: Values = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    if (value === null) {
      delete merged[key];
    } else if (isObject(current) && isObject(value)) {
      merged[key] = mergeValues(current, value);
    } else {
      merged[key] = value;
    }
  }
  return merged;
}

/** Runs helm with the given values as one -f file; rejects with helm's stderr in the message. */
export async function helmWithValues(
  helm: string,
  args: readonly string[],
  values: Values,
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-system-values-'));
  try {
    const file = join(dir, 'values.yaml');
    await writeFile(file, JSON.stringify(values));
    const { stdout } = await run(helm, [...args, '-f', file], { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `helm template` of the system chart into `namespace`; `showOnly` picks template files. */
export async function renderSystemChart(
  helm: string,
  namespace: string,
  values: Values,
  showOnly: readonly string[] = [],
): Promise<KubernetesObject[]> {
  const args = ['template', 'svc', systemChart, '--namespace', namespace];
  for (const template of showOnly) args.push('--show-only', template);
  const text = await helmWithValues(helm, args, values);
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as KubernetesObject | null)
    .filter((object): object is KubernetesObject => object !== null);
}
