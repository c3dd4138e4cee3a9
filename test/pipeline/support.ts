import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { SvcClient } from '../../contracts/index.ts';
import type { TriagePolicy } from '../../contracts/triage-policy.ts';
import { createSecretStore } from '../../src/cluster/secrets.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { postAlerts, wazuhAlert } from '../internal/ingest-support.ts';
import { adapterToken, setState } from '../internal/support.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import { type CortexStandIn, startCortexStandIn } from '../support/cortex-stand-in.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type LlmStandIn, startLlmStandIn } from '../support/llm-stand-in.ts';
import { loopbackCertificate } from '../support/loopback-tls.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { startTheHiveStandIn, type TheHiveStandIn } from '../support/thehive-stand-in.ts';

/** A public address (not a documentation or private range): analyzers only get public ones. */
export const ATTACKER_IP = '45.33.32.156';
export const LLM_KEY = 'sk-pipeline-test-0123456789';
export const ANALYZER = 'AbuseIPDB_1_0';

/**
 * One svc (API + job workers over one core) with real PostgreSQL, the test cluster's install
 * namespace for the tenants' Secrets, and local servers speaking the LLM (HTTPS, trusted through
 * SVC_OUTBOUND_CA_FILE), TheHive and Cortex protocols.
 */
export interface PipelineRig {
  db: TestDatabase;
  api: TestApi;
  llm: LlmStandIn;
  thehive: TheHiveStandIn;
  cortex: CortexStandIn;
  admin: SvcClient;
  /** The install namespace and the LLM stand-in's CA file, for a worker in its own process. */
  namespace: string;
  caFile: string;
  close(): Promise<void>;
}

export interface PipelineRigOptions {
  /** More svc settings (e.g. a short SVC_LLM_TIMEOUT), over the rig's own. */
  env?: Record<string, string>;
  /** Run the job workers in the API's process (default); false leaves them to `svc worker`s. */
  workers?: boolean;
}

export async function startPipelineRig(options: PipelineRigOptions = {}): Promise<PipelineRig> {
  const cluster = getTestCluster();
  const namespace = await createTestNamespace(cluster, 'install');
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-pipeline-'));
  const tls = await loopbackCertificate();
  const caFile = path.join(dir, 'ca.pem');
  await writeFile(caFile, tls.cert);
  const llm = await startLlmStandIn({ tls, apiKey: LLM_KEY });
  const thehive = await startTheHiveStandIn();
  const cortex = await startCortexStandIn({
    analyzers: [
      {
        name: ANALYZER,
        dataTypes: ['ip'],
        reports: {
          [ATTACKER_IP]: {
            taxonomies: [
              { level: 'malicious', namespace: 'AbuseIPDB', predicate: 'Score', value: '100' },
            ],
            full: {},
          },
        },
      },
    ],
  });
  const db = await createTestDatabase();
  const api = await startTestApi(db, {
    secrets: createSecretStore(cluster.kubeConfig, namespace),
    hash: { params: TEST_HASH_PARAMS },
    env: {
      SVC_INSTALL_NAMESPACE: namespace,
      SVC_OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
      SVC_OUTBOUND_CA_FILE: caFile,
      SVC_TRIAGE_DELAY: '0s',
      ...options.env,
    },
    projector: true,
    ...((options.workers ?? true)
      ? {
          workers: {
            concurrency: 4,
            pollIntervalMs: 200,
            pipeline: { kubeConfig: cluster.kubeConfig },
          },
        }
      : {}),
  });
  const admin = await signedInAs({ db, api }, 'mssp_admin');
  return {
    db,
    api,
    llm,
    thehive,
    cortex,
    admin,
    namespace,
    caFile,
    async close() {
      await api.close();
      await Promise.all([llm.close(), thehive.close(), cortex.close()]);
      await db.drop();
      await cluster.kubeConfig
        .makeApiClient(CoreV1Api)
        .deleteNamespace({ name: namespace })
        .catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A tenant whose LLM, case and analysis components are the rig's stand-ins. */
export async function pipelineTenant(
  rig: PipelineRig,
  policy: TriagePolicy = { analyzers: [ANALYZER] },
  options: { thehiveCredential?: string } = {},
): Promise<{ tenantId: string; token: string }> {
  const slug = `p-${randomUUID().slice(0, 8)}`;
  const res = await rig.admin.mssp.createTenant({
    body: {
      slug,
      display_name: `Pipeline ${slug}`,
      llm: {
        provider: 'openai',
        base_url: rig.llm.openaiBaseUrl,
        model: 'gpt-test',
        api_key: LLM_KEY,
      },
      integrations: {
        items: [
          {
            kind: 'thehive',
            name: 'main',
            endpoint_url: rig.thehive.url,
            credential: options.thehiveCredential ?? rig.thehive.apiKey,
          },
          {
            kind: 'cortex',
            name: 'main',
            endpoint_url: rig.cortex.url,
            credential: rig.cortex.apiKey,
          },
        ],
      },
    },
  });
  if (res.status !== 201)
    throw new Error(`tenant creation: ${res.status} ${JSON.stringify(res.body)}`);
  const tenantId = res.body.tenant.id;
  await setState(rig.db, tenantId, 'active');
  const put = await rig.admin.mssp.putTriagePolicy({
    params: { tenant_id: tenantId },
    body: policy,
  });
  if (put.status !== 200) throw new Error(`policy: ${put.status} ${JSON.stringify(put.body)}`);
  return { tenantId, token: await adapterToken(rig.api, tenantId) };
}

/** An alert with a user, an email and a public attacker address in it (redaction's targets). */
export function attackAlert(n: number, overrides: Record<string, unknown> = {}) {
  return wazuhAlert({
    id: `${Date.now()}.${n}.${randomUUID().slice(0, 6)}`,
    timestamp: new Date(Date.now() - 60_000 + n).toISOString(),
    rule: {
      level: 10,
      id: '5712',
      description: 'sshd: brute force trying to get access to the system. Non existent user.',
      groups: ['syslog', 'sshd', 'authentication_failures'],
    },
    data: { srcip: ATTACKER_IP, srcuser: 'alice.secret' },
    full_log: `Failed password for alice.secret from ${ATTACKER_IP} port 22 ssh2; notify bob.hidden@corp.example`,
    ...overrides,
  });
}

export async function ingest(
  rig: PipelineRig,
  token: string,
  alerts: Record<string, unknown>[],
  n = 1,
): Promise<void> {
  const res = await postAlerts(rig.api, token, {
    alerts,
    checkpoint: { search_after: [Date.now(), `doc-${n}-${randomUUID()}`], index: 'wazuh-alerts-*' },
  });
  if (res.status !== 200) throw new Error(`ingest: ${res.status} ${JSON.stringify(res.body)}`);
}

/** The tenant's investigation stream events, in order (read as svc_mssp, for assertions). */
export async function streamTypes(db: TestDatabase, tenantId: string): Promise<string[]> {
  const { rows } = await db.pools.mssp.query<{ type: string }>(
    `SELECT type FROM events WHERE tenant_id = $1 AND stream_type = 'investigation' ORDER BY id`,
    [tenantId],
  );
  return rows.map((r) => r.type);
}

export async function eventPayload(
  db: TestDatabase,
  tenantId: string,
  type: string,
): Promise<Record<string, unknown> | undefined> {
  const { rows } = await db.pools.mssp.query<{ payload: Record<string, unknown> }>(
    'SELECT payload FROM events WHERE tenant_id = $1 AND type = $2 ORDER BY id DESC LIMIT 1',
    [tenantId, type],
  );
  return rows[0]?.payload;
}

export function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  return waitUntil(what, probe, timeoutMs);
}
