import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import type { RealNode } from './real-node.ts';

const run = promisify(execFile);

/**
 * The network namespace containerd made for a Pod's sandbox on `node` (a bind mount under
 * /run/netns): tests enter it with `nsenter --net=` so their packets carry the Pod's own address
 * through the bridge, kube-proxy and kube-router, as the Pod's would.
 */
export async function podNetns(
  node: Pick<RealNode, 'name' | 'containerdSocket'>,
  pod: V1Pod,
): Promise<string> {
  const ctr = (...args: string[]) =>
    run('ctr', ['--address', node.containerdSocket, '--namespace', 'k8s.io', ...args], {
      maxBuffer: 16 * 2 ** 20,
    });
  const { stdout } = await ctr('containers', 'ls', '--quiet');
  for (const id of stdout.split('\n').filter(Boolean)) {
    const info = JSON.parse((await ctr('containers', 'info', id)).stdout) as {
      Labels?: Record<string, string>;
      Spec?: { linux?: { namespaces?: { type: string; path?: string }[] } };
    };
    const labels = info.Labels ?? {};
    if (
      labels['io.kubernetes.pod.uid'] === pod.metadata?.uid &&
      labels['io.cri-containerd.kind'] === 'sandbox'
    ) {
      const path = info.Spec?.linux?.namespaces?.find((n) => n.type === 'network')?.path;
      if (path) return path;
    }
  }
  throw new Error(`no sandbox network namespace for Pod ${pod.metadata?.name} on ${node.name}`);
}
