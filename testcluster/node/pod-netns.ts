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
    // The kubelet removes containers all the time (a finished init container, a restarted
    // one, another Pod's): one listed a moment ago may be gone now, and is not the sandbox sought.
    const described = await ctr('containers', 'info', id).catch((error: { stderr?: string }) => {
      if (/not found/.test(error.stderr ?? '')) return undefined;
      throw error;
    });
    if (described === undefined) continue;
    const info = JSON.parse(described.stdout) as {
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
