import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiException,
  type AppsV1Api,
  type CoreV1Api,
  type V1Container,
  type V1Pod,
  type V1Volume,
} from '@kubernetes/client-node';
import bcrypt from 'bcryptjs';
import { parse } from 'yaml';
import { type IndexerStandIn, startIndexerStandIn } from '../stand-ins/indexer.ts';
import { type AdapterProcess, startAdapter, writeSecretVolume } from './adapter-process.ts';

/**
 * Plays the kubelet for a tenant's adapter pod, for the tests and the demo (scripts/demo.ts).
 * The cluster's nodes are simulated (kwok): the API server, the scheduler and the controllers
 * are real, so the chart's `svc-adapter` Deployment really gets a Pod bound to a node, but no
 * container runs. This file runs that container: it reads the Pod svc's release made, writes
 * the Secrets and downward-API fields its volumes name into a temp dir the way the kubelet does
 * (`..data` symlink swap), and starts the real `svc adapter` OS process with the container's
 * environment, mount paths rewritten into the temp dir. What a test machine must change is
 * changed explicitly: svc's URL (the test API), the indexer (a stand-in, plain HTTP, accepting
 * the adapter's login once that is shown to be one the tenant's indexer accepts; or the real
 * one `options.indexer` starts, which judges the login itself), the health
 * server's address, and the heartbeat interval.
 *
 * Like the kubelet it stops the process when its Pod is deleted (namespace removal,
 * decommission, a rollout that replaces it). It plays that one Pod: a replacement Pod gets no
 * process. A volume, env source or command this file does not know fails the test instead of
 * being skipped, so a chart change cannot silently run the adapter differently from the Pod.
 */

/** What the kubelet stand-in needs from the orchestration. */
export interface AdapterPodCluster {
  core: CoreV1Api;
  apps: AppsV1Api;
  /** svc's base URL, in place of the chart's in-cluster `adapter.apiUrl`. */
  apiUrl: string;
}

/** The tenant's indexer as the adapter process reaches it. */
export interface PodIndexer {
  close(): Promise<void>;
}

/** Starts the indexer the adapter talks to, for the login its Pod mounts. */
export type PodIndexerFactory<I extends PodIndexer> = (
  login: { username: string; password: string },
  namespace: string,
) => Promise<{ indexer: I; env: Record<string, string> }>;

export interface AdapterPodOptions<I extends PodIndexer = IndexerStandIn> {
  /** Variables set on top of the Pod's environment (test timings). */
  env?: Record<string, string>;
  /**
   * The indexer to run instead of the stand-in (the demo's real one, testcluster/opensearch/
   * tenant-indexer.ts); its `env` (SVC_INDEXER_URL, …) goes on top of the Pod's environment.
   */
  indexer?: PodIndexerFactory<I>;
  /** How long to wait for the Pod to be scheduled. */
  timeoutMs?: number;
  /** Gives up waiting for the Pod (the process is then never started). */
  signal?: AbortSignal;
}

export interface AdapterPod<I extends PodIndexer = IndexerStandIn> {
  /** The Pod this process runs for. */
  podName: string;
  adapter: AdapterProcess;
  indexer: I;
  /** The environment the process was started with. */
  env: Record<string, string>;
  /** Resolves once the process has exited: its Pod was deleted, or stop() was called. */
  exited: Promise<void>;
  /** True once the process was stopped because its Pod was deleted. */
  podDeleted(): boolean;
  /** Stops the process (SIGTERM, as the kubelet does) and removes its files. Idempotent. */
  stop(): Promise<void>;
}

/** The chart's Deployment and container names (charts/svc-tenant/templates/adapter.yaml). */
const DEPLOYMENT = 'svc-adapter';
const CONTAINER = 'adapter';
/** The tenant's indexer (monitor subchart). */
const INDEXER_STATEFULSET = 'monitor-indexer';
/** The indexer security plugin's users file, when svc's configuration replaces the image's. */
const USERS_FILE = 'internal_users.yml';
/** The Wazuh indexer image's admin user, whose password INDEXER_PASSWORD sets. */
const INDEXER_ADMIN = 'admin';
/** Test timing, as FAST is the orchestrator's: the chart leaves the 30 s default. */
const TEST_ENV = { SVC_HEARTBEAT_SECONDS: '1' };

/** Every adapter process started here, killed if the test process exits without stopping it. */
const running = new Set<AdapterProcess>();
process.once('exit', () => {
  for (const adapter of running) adapter.child.kill('SIGKILL');
});

const notFound = (error: unknown) => error instanceof ApiException && error.code === 404;

async function secretData(
  core: CoreV1Api,
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  try {
    const secret = await core.readNamespacedSecret({ name, namespace });
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
  } catch (error) {
    if (notFound(error)) return undefined;
    throw error;
  }
}

/** The keys a volume source projects, under the file names its `items` give them. */
function pick(
  data: Record<string, string>,
  items: { key: string; path: string }[] | undefined,
  what: string,
): Record<string, string> {
  if (!items) return data;
  const files: Record<string, string> = {};
  for (const { key, path: file } of items) {
    const value = data[key];
    if (value === undefined) throw new Error(`${what} has no key ${key}`);
    files[file] = value;
  }
  return files;
}

async function secretFiles(
  core: CoreV1Api,
  namespace: string,
  name: string,
  items: { key: string; path: string }[] | undefined,
  optional: boolean,
): Promise<Record<string, string>> {
  const data = await secretData(core, namespace, name);
  if (data) return pick(data, items, `Secret ${namespace}/${name}`);
  if (optional) return {};
  // The kubelet would keep the Pod in ContainerCreating; a test has no use for that.
  throw new Error(`the Pod mounts Secret ${namespace}/${name}, which does not exist`);
}

function downwardField(pod: V1Pod, fieldPath: string): string {
  const meta = pod.metadata ?? {};
  const keyed = /^metadata\.(annotations|labels)\['(.+)'\]$/.exec(fieldPath);
  const value = keyed
    ? (keyed[1] === 'annotations' ? meta.annotations : meta.labels)?.[keyed[2] ?? '']
    : fieldPath === 'metadata.name'
      ? meta.name
      : fieldPath === 'metadata.namespace'
        ? meta.namespace
        : undefined;
  if (value === undefined) throw new Error(`the kubelet stand-in cannot resolve ${fieldPath}`);
  return value;
}

/** The files of one volume as the kubelet would write them, or undefined for an empty dir. */
async function volumeFiles(
  core: CoreV1Api,
  pod: V1Pod,
  volume: V1Volume,
): Promise<Record<string, string> | undefined> {
  const namespace = pod.metadata?.namespace ?? '';
  if (volume.emptyDir) return undefined;
  if (volume.secret) {
    const { secretName = '', items, optional = false } = volume.secret;
    return secretFiles(core, namespace, secretName, items, optional);
  }
  if (volume.projected) {
    const files: Record<string, string> = {};
    for (const source of volume.projected.sources ?? []) {
      if (source.secret) {
        const { name = '', items, optional = false } = source.secret;
        Object.assign(files, await secretFiles(core, namespace, name, items, optional));
      } else if (source.downwardAPI) {
        for (const item of source.downwardAPI.items ?? []) {
          if (!item.fieldRef) throw new Error(`volume ${volume.name}: only fieldRef is played`);
          files[item.path] = downwardField(pod, item.fieldRef.fieldPath);
        }
      } else {
        throw new Error(`volume ${volume.name}: a projected source the stand-in does not play`);
      }
    }
    return files;
  }
  throw new Error(`volume ${volume.name}: a volume type the kubelet stand-in does not play`);
}

/** The scheduled, not deleted Pod of the adapter Deployment, once there is one. */
async function scheduledPod(
  cluster: AdapterPodCluster,
  namespace: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<V1Pod> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    signal?.throwIfAborted();
    const deployment = await cluster.apps
      .readNamespacedDeployment({ name: DEPLOYMENT, namespace })
      .catch((error: unknown) => {
        if (notFound(error)) return undefined;
        throw error;
      });
    const selector = deployment?.spec?.selector.matchLabels;
    if (selector) {
      const labelSelector = Object.entries(selector)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      const pods = await cluster.core.listNamespacedPod({ namespace, labelSelector });
      const pod = pods.items.find((p) => p.spec?.nodeName && !p.metadata?.deletionTimestamp);
      if (pod) return pod;
    }
    if (Date.now() > deadline)
      throw new Error(`no scheduled ${DEPLOYMENT} Pod in ${namespace} within ${timeoutMs} ms`);
    await sleep(250, undefined, { signal });
  }
}

/** The adapter's indexer login as its Pod gives it: the two files its environment names. */
async function presentedLogin(env: Record<string, string>) {
  const userFile = env.SVC_INDEXER_USERNAME_FILE;
  const passwordFile = env.SVC_INDEXER_PASSWORD_FILE;
  if (!userFile || !passwordFile) throw new Error('the Pod gives the adapter no indexer login');
  const read = async (file: string) => (await readFile(file, 'utf8')).replace(/\n$/, '');
  return { username: await read(userFile), password: await read(passwordFile) };
}

/**
 * The adapter's login, once it is shown to be one the tenant's indexer accepts: a user of the
 * security configuration the indexer Pod mounts (`internal_users.yml`, bcrypt hashes), or, when
 * it mounts none, the image's `admin` with the password of its INDEXER_PASSWORD variable. The
 * stand-in then accepts exactly this login.
 */
async function indexerLogin(
  cluster: AdapterPodCluster,
  namespace: string,
  presented: { username: string; password: string },
) {
  const set = await cluster.apps.readNamespacedStatefulSet({
    name: INDEXER_STATEFULSET,
    namespace,
  });
  const spec = set.spec?.template.spec;
  const users = spec?.volumes?.find((v) => v.secret?.items?.some((i) => i.key === USERS_FILE));
  let accepted: boolean;
  if (users) {
    const name = users.secret?.secretName ?? '';
    const file = (await secretData(cluster.core, namespace, name))?.[USERS_FILE];
    const hash = (parse(file ?? '') as Record<string, { hash?: unknown }> | null)?.[
      presented.username
    ]?.hash;
    accepted = typeof hash === 'string' && (await bcrypt.compare(presented.password, hash));
  } else {
    const container = spec?.containers.find((c) => c.name === 'indexer');
    const ref = container?.env?.find((e) => e.name === 'INDEXER_PASSWORD')?.valueFrom?.secretKeyRef;
    if (!ref) throw new Error(`${INDEXER_STATEFULSET} takes no INDEXER_PASSWORD from a Secret`);
    const password = (await secretData(cluster.core, namespace, ref.name ?? ''))?.[ref.key];
    accepted = presented.username === INDEXER_ADMIN && presented.password === password;
  }
  if (!accepted) {
    throw new Error(
      `the tenant's indexer does not accept the adapter's login (${presented.username})`,
    );
  }
  return presented;
}

/** Writes the container's volumes under `root` and returns its env with paths moved there. */
async function materialize(
  core: CoreV1Api,
  pod: V1Pod,
  container: V1Container,
  root: string,
): Promise<Record<string, string>> {
  const mounts = container.volumeMounts ?? [];
  for (const mount of mounts) {
    const volume = pod.spec?.volumes?.find((v) => v.name === mount.name);
    if (!volume) throw new Error(`volumeMount ${mount.name} names no volume`);
    if (mount.subPath) throw new Error(`volumeMount ${mount.name}: subPath is not played`);
    const dir = path.join(root, mount.mountPath);
    const files = await volumeFiles(core, pod, volume);
    if (files === undefined || Object.keys(files).length === 0)
      await mkdir(dir, { recursive: true });
    else await writeSecretVolume(dir, files);
  }
  if (container.envFrom?.length) throw new Error('envFrom is not played');
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    if (variable.value === undefined)
      throw new Error(`env ${variable.name}: only values are played`);
    const mount = mounts.find(
      (m) => variable.value === m.mountPath || variable.value?.startsWith(`${m.mountPath}/`),
    );
    env[variable.name] = mount ? path.join(root, variable.value) : variable.value;
  }
  return env;
}

/**
 * Waits for the tenant's adapter Pod to be scheduled, then runs the real `svc adapter` for it
 * until the Pod is deleted or `stop()` is called.
 */
export async function runAdapterPod<I extends PodIndexer = IndexerStandIn>(
  cluster: AdapterPodCluster,
  slug: string,
  options: AdapterPodOptions<I> = {},
): Promise<AdapterPod<I>> {
  const namespace = `tenant-${slug}`;
  const pod = await scheduledPod(cluster, namespace, options.timeoutMs ?? 180_000, options.signal);
  const podName = pod.metadata?.name ?? '';
  const container = pod.spec?.containers.find((c) => c.name === CONTAINER);
  if (container?.command?.join(' ') !== 'svc adapter') {
    throw new Error(`Pod ${podName} does not run \`svc adapter\`: ${container?.command}`);
  }
  const root = await mkdtemp(path.join(tmpdir(), `svc-adapter-pod-${slug}-`));
  let indexer: I | undefined;
  let adapter: AdapterProcess;
  let env: Record<string, string>;
  try {
    const podEnv = await materialize(cluster.core, pod, container, root);
    let indexerEnv: Record<string, string>;
    if (options.indexer) {
      // A real indexer judges the login itself.
      const started = await options.indexer(await presentedLogin(podEnv), namespace);
      indexer = started.indexer;
      indexerEnv = started.env;
    } else {
      const login = await indexerLogin(cluster, namespace, await presentedLogin(podEnv));
      const standIn = await startIndexerStandIn(login);
      // Without a factory I is the default, IndexerStandIn.
      indexer = standIn as unknown as I;
      indexerEnv = { SVC_INDEXER_URL: standIn.url };
    }
    env = {
      ...podEnv,
      SVC_API_URL: cluster.apiUrl,
      ...indexerEnv,
      SVC_ADAPTER_HOST: '127.0.0.1',
      SVC_ADAPTER_PORT: '0',
      ...TEST_ENV,
      ...options.env,
    };
    adapter = await startAdapter(env);
  } catch (error) {
    await indexer?.close();
    await rm(root, { recursive: true, force: true });
    throw error;
  }
  running.add(adapter);
  const stopping = new AbortController();
  let deleted = false;
  const { child } = adapter;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  void exited.then(() => running.delete(adapter));

  // The kubelet's side of a Pod deletion: the container gets SIGTERM.
  void (async () => {
    while (!stopping.signal.aborted) {
      const gone = await cluster.core.readNamespacedPod({ name: podName, namespace }).then(
        (p) => Boolean(p.metadata?.deletionTimestamp),
        (error: unknown) => notFound(error),
      );
      if (stopping.signal.aborted) return;
      if (gone) {
        deleted = true;
        await adapter.stop('SIGTERM');
        return;
      }
      await sleep(1_000, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  })();

  const indexerServer = indexer;
  return {
    podName,
    adapter,
    indexer: indexerServer,
    env,
    exited,
    podDeleted: () => deleted,
    async stop() {
      stopping.abort();
      await adapter.stop('SIGTERM');
      await indexerServer.close().catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    },
  };
}
