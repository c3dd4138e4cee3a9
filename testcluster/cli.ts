import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  type ClusterProcess,
  components,
  isRunning,
  startCluster,
  stopCluster,
} from './harness.ts';

// `up` and `down` run in different processes, so the PIDs travel through this file.
const runDir = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'),
  'svc',
  'testcluster',
  'run',
);
const statePath = join(runDir, 'state.json');

interface State {
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly dir: string;
  readonly processes: readonly ClusterProcess[];
}

async function up(): Promise<void> {
  const state = await readState();
  if (state?.processes.every(isRunning)) {
    console.log(`Test cluster already running at ${state.server}`);
    console.log(`KUBECONFIG=${state.kubeconfigPath}`);
    return;
  }
  if (state) {
    await stopCluster(state.processes, state.dir);
  }
  const cluster = await startCluster({ dir: runDir, detached: true });
  const next: State = {
    kubeconfigPath: cluster.kubeconfigPath,
    server: cluster.server,
    dir: cluster.dir,
    processes: cluster.processes,
  };
  await mkdir(runDir, { recursive: true });
  await writeFile(statePath, `${JSON.stringify(next, null, 2)}\n`);
  console.log(`Test cluster ready at ${cluster.server}; logs in ${join(cluster.dir, 'logs')}`);
  console.log(`helm and the cluster binaries are in ${cluster.binDir}`);
  console.log(`KUBECONFIG=${cluster.kubeconfigPath}`);
}

async function down(): Promise<void> {
  const state = await readState();
  if (!state) {
    console.log('No test cluster is running.');
    return;
  }
  await stopCluster(state.processes, state.dir);
  console.log('Test cluster stopped and its files removed.');
}

async function readState(): Promise<State | undefined> {
  let text: string;
  try {
    text = await readFile(statePath, 'utf8');
  } catch {
    return undefined;
  }
  const parsed: unknown = JSON.parse(text);
  if (!isState(parsed)) {
    throw new Error(`testcluster: ${statePath} is not a state file written by this CLI`);
  }
  return parsed;
}

function isState(value: unknown): value is State {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const state = value as Record<string, unknown>;
  return (
    typeof state.kubeconfigPath === 'string' &&
    typeof state.server === 'string' &&
    typeof state.dir === 'string' &&
    Array.isArray(state.processes) &&
    state.processes.every(isProcess)
  );
}

function isProcess(value: unknown): value is ClusterProcess {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const proc = value as Record<string, unknown>;
  return (
    typeof proc.pid === 'number' &&
    typeof proc.binary === 'string' &&
    components.some((component) => component === proc.component)
  );
}

const commands: Record<string, () => Promise<void>> = { up, down };
const command = commands[process.argv[2] ?? ''];
if (!command) {
  console.error('usage: tsx testcluster/cli.ts up|down');
  process.exit(2);
}
try {
  await command();
  // Keep-alive sockets of the Kubernetes client would hold the process open for a while.
  process.exit(0);
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
