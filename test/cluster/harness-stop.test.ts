import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { test } from 'node:test';
import { isRunning, startCluster } from '../../testcluster/harness.ts';

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** TCP ports in LISTEN state owned by the given processes, read from /proc. */
function listeningPorts(pids: readonly number[]): number[] {
  const inodes = new Set<string>();
  for (const pid of pids) {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'utf8' });
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) {
        inodes.add(inode);
      }
    }
  }
  const ports = ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((table) =>
    readFileSync(table, 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((cols) => cols[3] === '0A' && inodes.has(cols[9] ?? ''))
      .map((cols) => Number.parseInt(cols[1]?.split(':')[1] ?? '', 16)),
  );
  return [...new Set(ports)].sort((a, b) => a - b);
}

test('harness: stop() leaves no process and no listening port behind', {
  timeout: 180_000,
}, async () => {
  const cluster = await startCluster();
  try {
    assert.deepEqual(
      cluster.processes.filter((p) => !isRunning(p)),
      [],
      'every component runs once the cluster is ready',
    );
    // So checking cluster.ports after stop() covers every listener the cluster had.
    assert.deepEqual(
      listeningPorts(Object.values(cluster.pids)),
      [...cluster.ports].sort((a, b) => a - b),
    );
    assert.equal(await portOpen(Number(new URL(cluster.server).port)), true);
  } finally {
    await cluster.stop();
  }

  assert.deepEqual(cluster.processes.filter(isRunning), []);
  for (const pid of Object.values(cluster.pids)) {
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
  }
  const open = [];
  for (const port of cluster.ports) {
    if (await portOpen(port)) {
      open.push(port);
    }
  }
  assert.deepEqual(open, []);
  assert.equal(existsSync(cluster.dir), false);
});
