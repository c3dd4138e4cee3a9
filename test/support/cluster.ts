import { delimiter } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import {
  type Cluster,
  type ClusterAccess,
  ensureBinaries,
  startCluster,
} from '../../testcluster/harness.ts';
import { startVolumeProvisioner, type VolumeProvisioner } from './volumes.ts';

// node:test starts each test file in a child process after the global setup has run, and the
// children inherit the setup process's environment (verified on Node 24.21), so plain env vars
// carry the cluster to every file. The volume provisioner runs in the setup process for the whole
// run (test/support/volumes.ts).
const kubeconfigVar = 'SVC_TEST_KUBECONFIG';
const errorVar = 'SVC_TEST_CLUSTER_ERROR';
const binDirVar = 'SVC_TEST_BIN_DIR';

let cluster: Cluster | undefined;
let provisioner: VolumeProvisioner | undefined;

/**
 * Starts one cluster for the whole run. A failure is recorded rather than thrown so the other
 * suites still run while every cluster test fails with the reason. When SVC_TEST_KUBECONFIG is
 * already set (say, from `npm run cluster:up`), that cluster is used and nothing is started.
 */
export async function clusterGlobalSetup(): Promise<void> {
  try {
    const { binDir } = await ensureBinaries();
    process.env[binDirVar] = binDir;
    process.env.PATH = `${binDir}${delimiter}${process.env.PATH ?? ''}`;
    let kubeconfigPath = process.env[kubeconfigVar];
    if (!kubeconfigPath) {
      cluster = await startCluster();
      kubeconfigPath = cluster.kubeconfigPath;
      process.env[kubeconfigVar] = kubeconfigPath;
    }
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfigPath);
    provisioner = await startVolumeProvisioner(kubeConfig);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.env[errorVar] = message;
    console.error(`cluster tests will fail: ${message}`);
  }
}

export async function clusterGlobalTeardown(): Promise<void> {
  await provisioner?.stop();
  provisioner = undefined;
  await cluster?.stop();
  cluster = undefined;
}

export interface TestCluster extends ClusterAccess {
  readonly kubeConfig: KubeConfig;
  /** Holds helm (also on PATH) and the cluster's binaries. */
  readonly binDir: string;
}

/** The run's cluster; throws the setup's reason when there is none, so the test fails. */
export function getTestCluster(): TestCluster {
  const error = process.env[errorVar];
  if (error) {
    throw new Error(error);
  }
  const kubeconfigPath = process.env[kubeconfigVar];
  const binDir = process.env[binDirVar];
  if (!kubeconfigPath || !binDir) {
    throw new Error(
      `${kubeconfigVar} is not set: run the tests with --test-global-setup=./test/support/global-setup.ts`,
    );
  }
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  return { kubeconfigPath, kubeConfig, binDir };
}

/** Polls check() until it returns a value other than undefined; errors count as "not yet". */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) {
        return value;
      }
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const reason = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${reason}`);
    }
    await sleep(250);
  }
}
