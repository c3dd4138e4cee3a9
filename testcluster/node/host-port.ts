import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeAddress } from './configs.ts';
import type { RealNode } from './real-node.ts';

/**
 * A port of the host's loopback made reachable from a real node's Pods at the node address
 * (10.200.0.1:<port>), the way the node already reaches the API server: a socat listener on a
 * unix socket in the host namespace that dials 127.0.0.1:<port>, and one inside the node's
 * network namespace that listens on the node address and dials the socket. No address is added
 * to the host's namespace. The demo uses it so adapter Pods on the real node reach `svc serve`
 * running on the host (docs/demo.md "Real node").
 */
export interface HostPort {
  /** What a Pod dials: `10.200.0.1`. */
  readonly address: string;
  readonly port: number;
  readonly pids: readonly number[];
  close(): Promise<void>;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Waits until something accepts TCP at `port` inside the node (socat's listener is up). */
async function waitListening(node: RealNode, port: number, deadline: number): Promise<void> {
  for (;;) {
    const { stdout } = await node.inNode('ss', ['-Htln', `sport = :${port}`]);
    if (stdout.trim() !== '') return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${nodeAddress}:${port}`);
    await sleep(50);
  }
}

/** Whether the host's loopback accepts connections on `port` (the thing being exposed). */
function hostAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

export async function exposeHostPort(node: RealNode, port: number): Promise<HostPort> {
  if (!(await hostAccepts(port))) throw new Error(`nothing listens on 127.0.0.1:${port}`);
  const socket = join(node.dir, `host-port-${port}.sock`);
  const children: ChildProcess[] = [];
  const start = (command: string, args: string[]) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(child);
    return child;
  };
  try {
    start('/usr/bin/socat', [`UNIX-LISTEN:${socket},fork,mode=600`, `TCP:127.0.0.1:${port}`]);
    start('nsenter', [
      `--net=${node.netnsPath}`,
      '/usr/bin/socat',
      `TCP-LISTEN:${port},bind=${nodeAddress},fork,reuseaddr`,
      `UNIX-CONNECT:${socket}`,
    ]);
    await waitListening(node, port, Date.now() + 10_000);
  } catch (error) {
    await Promise.all(children.map(stopChild));
    await rm(socket, { force: true });
    throw error;
  }
  return {
    address: nodeAddress,
    port,
    pids: children.flatMap((c) => (c.pid === undefined ? [] : [c.pid])),
    async close() {
      await Promise.all(children.map(stopChild));
      await rm(socket, { force: true });
    },
  };
}
