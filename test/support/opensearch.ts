import { randomBytes } from 'node:crypto';
import {
  INDEXER_ADMIN_DN,
  INDEXER_NODE_DN,
  INDEXER_TLS_SECRET,
  type IndexerTlsData,
  issueIndexerPki,
} from '../../src/orchestrator/indexer-pki.ts';
import {
  ADAPTER_INDEXER_SECRET,
  type IndexerPasswords,
  renderSecurityConfig,
} from '../../src/orchestrator/indexer-security.ts';
import {
  type OpenSearchNode,
  type OpenSearchResponse,
  openSearchRequest,
  type RequestOptions,
  type SecurityFiles,
  type SecurityOptions,
  type SecurityPem,
  type StartOpenSearchOptions,
  startOpenSearch,
} from '../../testcluster/opensearch/node.ts';

export * from '../../testcluster/opensearch/node.ts';

// node:test starts each test file in a child process after the global setup has run, and the
// children inherit its environment: the shared node's address travels like the database's.
export const OPENSEARCH_ENV = 'SVC_TEST_OPENSEARCH';
const errorVar = 'SVC_TEST_OPENSEARCH_ERROR';

/** What a test file gets of the run's shared plain node: address only, never stop(). */
export type SharedOpenSearch = Pick<OpenSearchNode, 'url' | 'httpPort' | 'tls' | 'security'>;

let globalNode: OpenSearchNode | undefined;

/**
 * Starts the run's shared plain node (docs/testing.md "The real indexer"). A failure is recorded
 * rather than thrown so the other suites still run while every indexer test fails with the
 * reason.
 */
export async function openSearchGlobalSetup(): Promise<void> {
  if (process.env[OPENSEARCH_ENV]) return;
  try {
    globalNode = await startOpenSearch();
    const shared: SharedOpenSearch = {
      url: globalNode.url,
      httpPort: globalNode.httpPort,
      tls: undefined,
      security: undefined,
    };
    process.env[OPENSEARCH_ENV] = JSON.stringify(shared);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.env[errorVar] = message;
    console.error(`indexer tests will fail: ${message}`);
  }
}

export async function openSearchGlobalTeardown(): Promise<void> {
  await globalNode?.stop();
  globalNode = undefined;
}

let ownNode: Promise<OpenSearchNode> | undefined;

/**
 * The run's shared plain node; when a single file runs without the global setup, a node of this
 * process (stopped when it exits). Tests share it, so each uses its own index names
 * (uniqueIndex).
 */
export async function sharedOpenSearch(): Promise<SharedOpenSearch> {
  const failed = process.env[errorVar];
  if (failed) throw new Error(`the shared OpenSearch node did not start: ${failed}`);
  const raw = process.env[OPENSEARCH_ENV];
  if (raw) return JSON.parse(raw) as SharedOpenSearch;
  ownNode ??= startOpenSearch();
  return ownNode;
}

/** An index name no other test uses: `<prefix>-<random>` (lower case, as OpenSearch requires). */
export function uniqueIndex(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** openSearchRequest that fails the test on an unexpected status. */
export async function expectOk(
  node: Pick<OpenSearchNode, 'url' | 'tls' | 'security'>,
  path: string,
  opts: RequestOptions = {},
): Promise<OpenSearchResponse> {
  const res = await openSearchRequest(node, path, opts);
  if (res.status < 200 || res.status >= 300) {
    throw new Error(`${opts.method ?? 'request'} ${path}: HTTP ${res.status} ${res.text}`);
  }
  return res;
}

/** svc's PKI as the launcher takes it (the Secret svc-indexer-tls's keys). */
export function securityPem(tls: IndexerTlsData): SecurityPem {
  const k = INDEXER_TLS_SECRET.keys;
  return {
    rootCa: tls[k.ca],
    nodeCert: tls[k.node],
    nodeKey: tls[k.nodeKey],
    adminCert: tls[k.admin],
    adminKey: tls[k.adminKey],
  };
}

/** The launcher's security options for svc's PKI and rendered users, with the chart's DNs. */
export async function tenantSecurity(
  tls: IndexerTlsData,
  passwords: IndexerPasswords,
  extra: Pick<SecurityOptions, 'initSecurityIndex'> = {},
): Promise<SecurityOptions> {
  const files = (await renderSecurityConfig(passwords)) as unknown as SecurityFiles;
  return {
    pem: securityPem(tls),
    files,
    nodeDn: INDEXER_NODE_DN,
    adminDn: INDEXER_ADMIN_DN,
    ...extra,
  };
}

export interface TenantIndexer {
  node: OpenSearchNode;
  /** The PKI svc issued for it (Secret svc-indexer-tls). */
  pki: IndexerTlsData;
  passwords: IndexerPasswords;
  /** svc-adapter's login (Secret svc-adapter-indexer). */
  adapter: { username: string; password: string };
}

/**
 * A security node configured as a tenant's indexer: svc's PKI for `namespace`, svc's rendered
 * users (admin and svc-adapter with fresh passwords), the chart's opensearch.yml settings. Its
 * own node: the caller stops it.
 */
export async function startTenantIndexer(
  opts: { namespace?: string; passwords?: IndexerPasswords } & Omit<
    StartOpenSearchOptions,
    'security'
  > = {},
): Promise<TenantIndexer> {
  const { namespace = 'svc-tenant-test', passwords: given, ...start } = opts;
  const passwords = given ?? {
    admin: randomBytes(18).toString('base64url'),
    adapter: randomBytes(18).toString('base64url'),
  };
  const pki = await issueIndexerPki(namespace, new Date());
  const node = await startOpenSearch({ ...start, security: await tenantSecurity(pki, passwords) });
  return {
    node,
    pki,
    passwords,
    adapter: { username: ADAPTER_INDEXER_SECRET.username, password: passwords.adapter },
  };
}
