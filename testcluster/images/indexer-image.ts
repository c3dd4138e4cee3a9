import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { RealNode } from '../node/real-node.ts';
import { builtTestImage } from './images.ts';

const run = promisify(execFile);

/**
 * The tenant chart's indexer image on a real node (docs/test-images.md "opensearch"): the
 * OpenSearch test image, laid out as the Wazuh indexer image the chart names, imported into the
 * node's containerd under that name. The kubelet then finds `wazuh/wazuh-indexer:<tag>` present
 * and never pulls (the node has no route out anyway).
 */

const helpers = new URL(
  '../../charts/svc-tenant/charts/monitor/templates/_helpers.tpl',
  import.meta.url,
);

/** The image the monitor subchart pins for its indexer (`monitor.image.indexer`), as written. */
export async function chartIndexerImage(): Promise<string> {
  const text = await readFile(helpers, 'utf8');
  const image = /define "monitor\.image\.indexer" -}}\s*([^{\s]+)\s*{{/.exec(text)?.[1];
  if (!image) throw new Error(`no monitor.image.indexer definition in ${helpers.pathname}`);
  return image;
}

/**
 * The name containerd's CRI looks a Pod's image up by (Docker's normalisation): a first path
 * component that is not a host (no dot or port, not localhost) means docker.io, and a name
 * with no path at all is under library/.
 */
export function normalizedImageName(image: string): string {
  const slash = image.indexOf('/');
  const first = slash < 0 ? '' : image.slice(0, slash);
  if (first && (first.includes('.') || first.includes(':') || first === 'localhost')) return image;
  return slash < 0 ? `docker.io/library/${image}` : `docker.io/${image}`;
}

export interface ImportedIndexerImage {
  /** The name the chart's Pod spec carries, e.g. wazuh/wazuh-indexer:4.9.2. */
  readonly chartImage: string;
  /** The name containerd holds it under, e.g. docker.io/wazuh/wazuh-indexer:4.9.2. */
  readonly ref: string;
  /** The test image's own name (localhost/svc-test/opensearch:2.19.4), also present. */
  readonly standInRef: string;
}

/**
 * Builds (or finds) the OpenSearch test image, imports it into `node` and tags it with the
 * chart's indexer image name, normalised as the CRI resolves it.
 */
export async function importIndexerImage(
  node: Pick<RealNode, 'importImage' | 'containerdSocket'>,
): Promise<ImportedIndexerImage> {
  const [image, chartImage] = await Promise.all([
    builtTestImage('opensearch'),
    chartIndexerImage(),
  ]);
  const names = await node.importImage(image.archive);
  if (!names.includes(image.ref)) {
    throw new Error(`importing ${image.archive} made ${names.join(', ')}, not ${image.ref}`);
  }
  const ref = normalizedImageName(chartImage);
  await run('ctr', [
    '--address',
    node.containerdSocket,
    '--namespace',
    'k8s.io',
    'images',
    'tag',
    '--force',
    image.ref,
    ref,
  ]);
  return { chartImage, ref, standInRef: image.ref };
}
