// The configuration files of one real node's components, as text. Every path lives under the
// node's own directory, so two nodes (or a node and the machine) never share state.
import { join } from 'node:path';

/** The fixed address of every real node inside its own network namespace (never on the host). */
export const nodeAddress = '10.200.0.1';
/** Where the in-namespace forwarder listens for the API server (node and Pods alike). */
export const apiserverPortInNode = 6443;
/**
 * Each node's Pods get their own /24 of 10.244.0.0/16: nodes share InternalIP 127.0.0.1, and a
 * policy agent that matches Pods by IP must never see the same Pod IP on two nodes at once.
 */
export function podNetwork(index: number): { subnet: string; gateway: string } {
  return { subnet: `10.244.${index}.0/24`, gateway: `10.244.${index}.1` };
}
export const clusterDns = '10.96.0.10';
export const pauseImage = 'localhost/svc-test/pause:3.10';
export const realNodeLabel = 'svc.test/real-node';

export interface NodePaths {
  readonly dir: string;
  readonly containerdSocket: string;
  readonly cniConfDir: string;
}

export function nodePaths(dir: string): NodePaths {
  return {
    dir,
    containerdSocket: join(dir, 'containerd', 'containerd.sock'),
    cniConfDir: join(dir, 'cni', 'net.d'),
  };
}

/**
 * containerd 1.6 (Debian): its own root, state and socket; cgroupfs (no systemd here);
 * restrict_oom_score_adj because root lacks CAP_SYS_RESOURCE (../shared/NOTES.md); the
 * snapshotters that need kernel features or tools this machine lacks are disabled.
 */
export function containerdConfig(paths: NodePaths): string {
  const d = paths.dir;
  return `version = 2
root = "${join(d, 'containerd', 'root')}"
state = "${join(d, 'containerd', 'state')}"
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = "${paths.containerdSocket}"

[ttrpc]
  address = "${join(d, 'containerd', 'containerd.sock.ttrpc')}"

[plugins."io.containerd.internal.v1.opt"]
  path = "${join(d, 'containerd', 'opt')}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${pauseImage}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${paths.cniConfDir}"
    max_conf_num = 1
`;
}

/** A bridge with host-local addresses; IPAM state under the node's directory, not /var/lib/cni. */
export function cniConfig(dir: string, subnetIndex: number): string {
  const { subnet, gateway } = podNetwork(subnetIndex);
  return `${JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'svc-realnode',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          // No masquerading: a Pod's packets to another linked node's Pods (link.ts) must keep
          // the Pod's address for that node's policy agent; nothing else leaves the namespace.
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet, gateway }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: join(dir, 'cni', 'ipam'),
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

export interface KubeletConfigInput {
  readonly dir: string;
  readonly name: string;
  readonly port: number;
  readonly caFile: string;
  readonly cgroupRoot: string;
}

/**
 * cgroup v1 and no systemd (failCgroupV1: false, cgroupfs); pods under a cgroup of the node's
 * own; eviction thresholds low enough that a busy shared disk never taints the node; the
 * API server (as the cluster's admin certificate) is the only client it trusts.
 */
export function kubeletConfig(input: KubeletConfigInput): string {
  const { dir } = input;
  return `${JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      cgroupRoot: input.cgroupRoot,
      failSwapOn: false,
      // The default (-999) needs CAP_SYS_RESOURCE, which root lacks on these machines.
      oomScoreAdj: 0,
      address: '0.0.0.0',
      port: input.port,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: input.caFile },
      },
      authorization: { mode: 'Webhook' },
      clusterDNS: [clusterDns],
      clusterDomain: 'cluster.local',
      resolvConf: join(dir, 'resolv.conf'),
      podLogsDir: join(dir, 'pod-logs'),
      staticPodPath: '',
      registerNode: true,
      registerWithTaints: [{ key: realNodeLabel, value: 'true', effect: 'NoSchedule' }],
      evictionHard: {
        'memory.available': '1Mi',
        'nodefs.available': '1%',
        'nodefs.inodesFree': '1%',
        'imagefs.available': '1%',
      },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      // Status updates often enough that Ready shows within seconds of registration.
      nodeStatusUpdateFrequency: '2s',
      syncFrequency: '5s',
      fileCheckFrequency: '5s',
      serializeImagePulls: false,
      containerRuntimeEndpoint: `unix://${join(dir, 'containerd', 'containerd.sock')}`,
      runtimeRequestTimeout: '2m',
      localStorageCapacityIsolation: true,
      shutdownGracePeriod: '0s',
    },
    null,
    2,
  )}\n`;
}

/** iptables mode; conntrack sizes and timeouts left alone (they are machine-wide on old kernels). */
export function kubeProxyConfig(kubeconfig: string, name: string, subnetIndex: number): string {
  return `${JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clientConnection: { kubeconfig },
      hostnameOverride: name,
      clusterCIDR: podNetwork(subnetIndex).subnet,
      detectLocalMode: 'ClusterCIDR',
      bindAddress: nodeAddress,
      healthzBindAddress: '127.0.0.1:10256',
      metricsBindAddress: '127.0.0.1:10249',
      conntrack: {
        maxPerCore: 0,
        min: 0,
        tcpEstablishedTimeout: '0s',
        tcpCloseWaitTimeout: '0s',
        udpTimeout: '0s',
        udpStreamTimeout: '0s',
      },
      iptables: { syncPeriod: '5s', minSyncPeriod: '0s' },
    },
    null,
    2,
  )}\n`;
}

/** JSON is valid YAML; the node's components reach the API server through the forwarder. */
export function kubeconfigText(caData: string, user: string, cert: Buffer, key: Buffer): string {
  const server = `https://127.0.0.1:${apiserverPortInNode}`;
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'svc', cluster: { server, 'certificate-authority-data': caData } }],
      users: [
        {
          name: user,
          user: {
            'client-certificate-data': cert.toString('base64'),
            'client-key-data': key.toString('base64'),
          },
        },
      ],
      contexts: [{ name: 'svc', context: { cluster: 'svc', user } }],
      'current-context': 'svc',
    },
    null,
    2,
  )}\n`;
}
