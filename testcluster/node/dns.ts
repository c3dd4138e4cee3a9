// Cluster DNS for a real node: CoreDNS (built from Go modules by testcluster/build.sh) runs as a
// Pod in kube-system on the node, behind Service kube-system/kube-dns at 10.96.0.10. It is a Pod
// and not a process on the node's address because the policy enforcer (netpol.ts) judges a Pod's
// egress by the peer's *Pod* IP: the tenant chart's `allow-dns` admits DNS to Pods in kube-system
// only, exactly as on a real cluster (docs/test-cluster-network.md).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1Pod,
} from '@kubernetes/client-node';
import { ensureBinaries } from '../harness.ts';
import { clusterDns, realNodeLabel } from './configs.ts';

const run = promisify(execFile);

export const corednsImage = 'localhost/svc-test/coredns:1.15.0';
const namespace = 'kube-system';
const serviceAccount = 'coredns';
const dnsLabel = { 'k8s-app': 'kube-dns' };
/**
 * 53 in the Pod too: a NetworkPolicy's ports match the Pod's port after the Service's DNAT, and
 * the charts allow DNS on 53. A namespaced sysctl lets uid 65532 bind it without capabilities.
 */
const dnsPort = 53;
const healthPort = 8080;
const readyPort = 8181;

/**
 * Answers cluster.local and the reverse zones from the API (in-cluster credentials of
 * ServiceAccount kube-system/coredns) and NXDOMAIN for every other name: there is no upstream
 * to forward to on these machines. Two server blocks, because plugins run in CoreDNS's compiled
 * order (template before kubernetes), not in the Corefile's: the most specific zone picks one.
 */
export const corefile = `cluster.local:${dnsPort} in-addr.arpa:${dnsPort} ip6.arpa:${dnsPort} {
    errors
    health :${healthPort}
    ready :${readyPort}
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        ttl 5
    }
    loadbalance
}
.:${dnsPort} {
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`;

/** What startClusterDns needs of a real node (testcluster/node/real-node.ts RealNode has it). */
export interface DnsNode {
  readonly name: string;
  readonly netnsPath: string;
  importImage(archivePath: string): Promise<unknown>;
}

export interface ClusterDns {
  /** The CoreDNS Pod's name and address on the node. */
  readonly podName: string;
  readonly podIp: string;
  /** Milliseconds from the call to a Pod that answers. */
  readonly readyAfterMs: number;
  stop(): Promise<void>;
}

export interface StartClusterDnsOptions {
  /** The cluster's admin kubeconfig (host side). */
  readonly kubeconfigPath: string;
  readonly node: DnsNode;
  readonly timeoutMs?: number;
}

/**
 * Imports the CoreDNS image into the node, makes (idempotently, as two nodes may start at once)
 * the ServiceAccount, RBAC, ConfigMap and Service kube-dns, and starts this node's CoreDNS Pod.
 * Resolves once the Pod is Ready and answers for kubernetes.default from inside the node.
 */
export async function startClusterDns(opts: StartClusterDnsOptions): Promise<ClusterDns> {
  const started = performance.now();
  const deadline = Date.now() + (opts.timeoutMs ?? 90_000);
  const { node } = opts;
  const kc = new KubeConfig();
  kc.loadFromFile(opts.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);

  await node.importImage(await corednsImageArchive());
  await ensureDnsObjects(core, rbac);
  const podName = `coredns-${node.name}`;
  await createOrIgnore(() =>
    core.createNamespacedPod({ namespace, body: corednsPod(podName, node.name) }),
  );
  const stop = async () => {
    await core
      .deleteNamespacedPod({ name: podName, namespace, gracePeriodSeconds: 0 })
      .catch(ignoreNotFound);
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      const gone = await core
        .readNamespacedPod({ name: podName, namespace })
        .then(() => false)
        .catch((error) => error instanceof ApiException && error.code === 404);
      if (gone) return;
      await sleep(200);
    }
    throw new Error(`clusterdns: Pod ${namespace}/${podName} still exists 30 s after delete`);
  };

  try {
    let pod: V1Pod | undefined;
    for (;;) {
      pod = await core.readNamespacedPod({ name: podName, namespace }).catch(() => undefined);
      const ready = pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      if (ready && pod?.status?.podIP) break;
      if (Date.now() > deadline) {
        throw new Error(
          `clusterdns: Pod ${namespace}/${podName} not Ready in time: ${JSON.stringify(pod?.status ?? {})}`,
        );
      }
      await sleep(250);
    }
    const podIp = pod.status?.podIP ?? '';
    // The readiness probe means "synced with the API"; this proves the Pod answers queries.
    for (;;) {
      const answer = await resolveInNode(node.netnsPath, 'kubernetes.default.svc.cluster.local', {
        server: `${podIp}:${dnsPort}`,
      });
      if ('records' in answer && answer.records.length > 0) break;
      if (Date.now() > deadline) {
        throw new Error(
          `clusterdns: CoreDNS at ${podIp} does not answer: ${JSON.stringify(answer)}`,
        );
      }
      await sleep(250);
    }
    return { podName, podIp, readyAfterMs: Math.round(performance.now() - started), stop };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

export type ResolveAnswer = { records: unknown[] } | { error: string };

/**
 * Resolves `name` with node:dns from inside the node's network namespace (a child Node process
 * entered with nsenter), so tests in the host namespace can ask a DNS server only the node sees.
 */
export async function resolveInNode(
  netnsPath: string,
  name: string,
  opts: { server?: string; type?: 'A' | 'SRV' | 'PTR' } = {},
): Promise<ResolveAnswer> {
  const script = `
const { Resolver } = require('node:dns').promises;
const [name, type, server] = process.argv.slice(1);
const resolver = new Resolver({ timeout: 1000, tries: 2 });
resolver.setServers([server]);
resolver.resolve(name, type).then(
  (records) => console.log(JSON.stringify({ records })),
  (error) => console.log(JSON.stringify({ error: error.code ?? String(error) })),
);`;
  const { stdout } = await run('nsenter', [
    `--net=${netnsPath}`,
    process.execPath,
    '-e',
    script,
    name,
    opts.type ?? 'A',
    opts.server ?? clusterDns,
  ]);
  return JSON.parse(stdout) as ResolveAnswer;
}

function corednsPod(name: string, nodeName: string): V1Pod {
  // Readiness is checked often (start-up waits on it); liveness as CoreDNS's own manifest does
  // (5 s timeouts, 5 misses 10 s apart): on a busy 2-core node 1 s answers are not guaranteed,
  // and restarting the cluster's DNS for slowness took every test's name lookups down with it.
  const probe = (path: string, port: number, periodSeconds: number) => ({
    httpGet: { path, port },
    periodSeconds,
    timeoutSeconds: 5,
    failureThreshold: 5,
  });
  return {
    metadata: { name, namespace, labels: { ...dnsLabel, 'svc.test/real-node': nodeName } },
    spec: {
      nodeName,
      serviceAccountName: serviceAccount,
      // Its own resolv.conf must not point at itself; CoreDNS forwards nothing anyway.
      dnsPolicy: 'Default',
      tolerations: [{ key: realNodeLabel, operator: 'Exists' }],
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
        // A "safe" sysctl (allowed by every kubelet), set in the Pod's own network namespace.
        sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: String(dnsPort) }],
      },
      containers: [
        {
          name: 'coredns',
          image: corednsImage,
          imagePullPolicy: 'Never',
          args: ['-conf', '/etc/coredns/Corefile'],
          ports: [
            { name: 'dns', containerPort: dnsPort, protocol: 'UDP' },
            { name: 'dns-tcp', containerPort: dnsPort, protocol: 'TCP' },
          ],
          readinessProbe: probe('/ready', readyPort, 2),
          livenessProbe: probe('/health', healthPort, 10),
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
        },
      ],
      volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
    },
  };
}

/** The objects every real node's CoreDNS shares; two nodes starting at once may both create. */
async function ensureDnsObjects(core: CoreV1Api, rbac: RbacAuthorizationV1Api): Promise<void> {
  await createOrIgnore(() =>
    core.createNamespacedServiceAccount({
      namespace,
      body: { metadata: { name: serviceAccount } },
    }),
  );
  // What upstream CoreDNS's kubernetes plugin lists and watches.
  await createOrIgnore(() =>
    rbac.createClusterRole({
      body: {
        metadata: { name: 'svc-test:coredns' },
        rules: [
          {
            apiGroups: [''],
            resources: ['endpoints', 'services', 'pods', 'namespaces'],
            verbs: ['list', 'watch'],
          },
          {
            apiGroups: ['discovery.k8s.io'],
            resources: ['endpointslices'],
            verbs: ['list', 'watch'],
          },
        ],
      },
    }),
  );
  await createOrIgnore(() =>
    rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'svc-test:coredns' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'svc-test:coredns',
        },
        subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
      },
    }),
  );
  // Updated when an earlier run (a `cluster:up` cluster) left another Corefile behind.
  const configMap = { metadata: { name: 'coredns' }, data: { Corefile: corefile } };
  await createOrIgnore(() => core.createNamespacedConfigMap({ namespace, body: configMap }));
  const existing = await core.readNamespacedConfigMap({ name: 'coredns', namespace });
  if (existing.data?.Corefile !== corefile) {
    await createOrIgnore(() =>
      core.replaceNamespacedConfigMap({
        name: 'coredns',
        namespace,
        body: { ...configMap, metadata: { ...existing.metadata, name: 'coredns' } },
      }),
    );
  }
  // Local: every real node has its own CoreDNS and the same Pod subnet, so a node must never
  // send a query to another node's Pod address (it would reach a different Pod, or nothing).
  const ports = [
    { name: 'dns', port: 53, targetPort: dnsPort, protocol: 'UDP' },
    { name: 'dns-tcp', port: 53, targetPort: dnsPort, protocol: 'TCP' },
  ];
  await createOrIgnore(() =>
    core
      .createNamespacedService({
        namespace,
        body: {
          metadata: { name: 'kube-dns', labels: { ...dnsLabel, 'kubernetes.io/name': 'CoreDNS' } },
          spec: {
            clusterIP: clusterDns,
            selector: dnsLabel,
            internalTrafficPolicy: 'Local',
            ports,
          },
        },
      })
      .catch(async (error: unknown) => {
        // Two nodes starting at once: the loser's create can fail on the ClusterIP the winner
        // has just allocated (422 "already allocated") before it meets the name (409), while the
        // winner's Service is still being stored. It is there a moment later.
        if (!(error instanceof ApiException && error.code === 422)) throw error;
        const until = Date.now() + 15_000;
        for (;;) {
          const found = await core
            .readNamespacedService({ name: 'kube-dns', namespace })
            .then(() => true)
            .catch(() => false);
          if (found) return;
          if (Date.now() > until) throw error;
          await sleep(200);
        }
      }),
  );
  const service = await core.readNamespacedService({ name: 'kube-dns', namespace });
  const current = (service.spec?.ports ?? []).map((p) => `${p.protocol}/${p.port}>${p.targetPort}`);
  if (current.join() !== ports.map((p) => `${p.protocol}/${p.port}>${p.targetPort}`).join()) {
    // A 409 here means another node's start replaced it first, with the same ports.
    await createOrIgnore(() =>
      core.replaceNamespacedService({
        name: 'kube-dns',
        namespace,
        body: { ...service, spec: { ...service.spec, ports, selector: dnsLabel } },
      }),
    );
  }
}

/**
 * The CoreDNS image: one layer with the static binary, written as an OCI archive beside the
 * binaries (so a new CoreDNS build makes a new image) and imported with `ctr images import`.
 */
export async function corednsImageArchive(): Promise<string> {
  const { binDir } = await ensureBinaries();
  const archive = join(dirname(binDir), 'images', 'coredns.oci.tar');
  if (
    await stat(archive).then(
      () => true,
      () => false,
    )
  )
    return archive;
  await mkdir(dirname(archive), { recursive: true });
  const partial = `${archive}.${process.pid}.partial`;
  await writeOciArchive(partial, {
    ref: corednsImage,
    files: [{ source: join(binDir, 'coredns'), path: 'coredns', mode: 0o755 }],
    entrypoint: ['/coredns'],
    user: '65532:65532',
  });
  // Two test files may build at once; both write the same bytes, the last rename wins.
  await rename(partial, archive);
  return archive;
}

interface ImageFile {
  readonly source: string;
  /** Path inside the image, relative to its root. */
  readonly path: string;
  readonly mode: number;
}

/**
 * A single-layer OCI image layout, tarred (what `ctr images import` reads). The layer is an
 * uncompressed tar with fixed owners and times, so the same inputs give the same digests.
 */
export async function writeOciArchive(
  out: string,
  image: { ref: string; files: readonly ImageFile[]; entrypoint: string[]; user: string },
): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'svc-oci-'));
  try {
    const rootfs = join(work, 'rootfs');
    const blobs = join(work, 'layout', 'blobs', 'sha256');
    await mkdir(blobs, { recursive: true });
    for (const file of image.files) {
      const target = join(rootfs, file.path);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, await readFile(file.source), { mode: file.mode });
    }
    const layerPath = join(work, 'layer.tar');
    await run('tar', [
      '--create',
      `--file=${layerPath}`,
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mtime=@0',
      '--sort=name',
      `--directory=${rootfs}`,
      ...image.files.map((f) => f.path),
    ]);
    const layer = await readFile(layerPath);
    const blob = async (data: Buffer) => {
      const digest = createHash('sha256').update(data).digest('hex');
      await writeFile(join(blobs, digest), data);
      return { digest: `sha256:${digest}`, size: data.length };
    };
    const layerBlob = await blob(layer);
    const config = Buffer.from(
      JSON.stringify({
        created: '1970-01-01T00:00:00Z',
        architecture: 'amd64',
        os: 'linux',
        config: { Entrypoint: image.entrypoint, User: image.user },
        rootfs: { type: 'layers', diff_ids: [layerBlob.digest] },
        history: [{ created: '1970-01-01T00:00:00Z', created_by: 'svc testcluster' }],
      }),
    );
    const configBlob = await blob(config);
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...configBlob },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layerBlob }],
      }),
    );
    const manifestBlob = await blob(manifest);
    const tag = image.ref.slice(image.ref.lastIndexOf(':') + 1);
    await writeFile(
      join(work, 'layout', 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        manifests: [
          {
            mediaType: 'application/vnd.oci.image.manifest.v1+json',
            ...manifestBlob,
            annotations: {
              'io.containerd.image.name': image.ref,
              'org.opencontainers.image.ref.name': tag,
            },
          },
        ],
      }),
    );
    await writeFile(
      join(work, 'layout', 'oci-layout'),
      JSON.stringify({ imageLayoutVersion: '1.0.0' }),
    );
    await run('tar', [
      '--create',
      `--file=${out}`,
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mtime=@0',
      '--sort=name',
      `--directory=${join(work, 'layout')}`,
      'oci-layout',
      'index.json',
      'blobs',
    ]);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Creates an object another real node may have created first (409 = already there). */
export async function createOrIgnore(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
  }
}

function ignoreNotFound(error: unknown): void {
  if (!(error instanceof ApiException && error.code === 404)) throw error;
}
