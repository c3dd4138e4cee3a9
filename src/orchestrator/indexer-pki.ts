// @peculiar/x509 2.x resolves its ASN.1 parsers through tsyringe, which needs the Reflect
// metadata polyfill loaded first (a side-effect import, kept ahead of the library's).
import 'reflect-metadata';
import { createHash, createPrivateKey, type webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import {
  ALGORITHM,
  addYears,
  BACKDATE_MS,
  encoded,
  generateKeys,
  pkcs8Pem,
  serial,
} from './pki-primitives.ts';

/**
 * Per-tenant PKI of the tenant's Wazuh indexer (docs/charts-tenant.md "Indexer TLS"): svc issues
 * a root CA, the indexer node certificate and the security plugin's admin client certificate at
 * provisioning, instead of trusting the demo certificates baked into the image. The material
 * lives only in the Secret `svc-indexer-tls` of the tenant namespace; the database records the
 * reference.
 */

export const INDEXER_TLS_SECRET = {
  name: 'svc-indexer-tls',
  purpose: 'indexer-tls',
  keys: {
    ca: 'root-ca.pem',
    node: 'indexer.pem',
    nodeKey: 'indexer-key.pem',
    admin: 'admin.pem',
    adminKey: 'admin-key.pem',
  },
} as const;

/**
 * Subjects as RFC 4514 strings (most specific RDN first, as Java's X500Principal prints them):
 * the chart's opensearch.yml names the node and admin DNs verbatim in
 * `plugins.security.nodes_dn` / `authcz.admin_dn`, so they are fixed.
 */
export const INDEXER_NODE_DN = 'CN=monitor-indexer,OU=indexer,O=svc-tenant';
export const INDEXER_ADMIN_DN = 'CN=svc-indexer-admin,OU=indexer,O=svc-tenant';
export const INDEXER_CA_DN = 'CN=svc-tenant indexer root CA,O=svc-tenant';

export const CA_YEARS = 10;
export const LEAF_YEARS = 2;
/**
 * A certificate with less left than this is re-issued by the next pass (provisioning, upgrade,
 * configuration change, namespace refill, and the periodic reconciler).
 */
export const RENEW_BEFORE_MS = 30 * 24 * 3_600_000;

export type IndexerTlsData = Record<
  (typeof INDEXER_TLS_SECRET.keys)[keyof typeof INDEXER_TLS_SECRET.keys],
  string
>;

/**
 * Names the node certificate must carry: the Service in every spelling a client in the cluster
 * uses, and the StatefulSet pod's own DNS name (monitor-indexer-0, one replica).
 */
export function indexerDnsNames(namespace: string): string[] {
  const service = `monitor-indexer.${namespace}`;
  const pod = `monitor-indexer-0.monitor-indexer.${namespace}`;
  return [
    'monitor-indexer',
    service,
    `${service}.svc`,
    `${service}.svc.cluster.local`,
    `${pod}.svc`,
    `${pod}.svc.cluster.local`,
  ];
}

const { KeyUsageFlags: KU } = x509;

/** Issues a fresh CA, node and admin certificate for the indexer of `namespace`. */
export async function issueIndexerPki(namespace: string, now: Date): Promise<IndexerTlsData> {
  const [caKeys, nodeKeys, adminKeys] = await Promise.all([
    generateKeys(),
    generateKeys(),
    generateKeys(),
  ]);
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: encoded(INDEXER_CA_DN),
    notBefore,
    notAfter: addYears(now, CA_YEARS),
    signingAlgorithm: ALGORITHM,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(KU.keyCertSign | KU.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const leaf = async (
    subject: string,
    keys: webcrypto.CryptoKeyPair,
    usages: string[],
    extra: x509.Extension[],
  ) =>
    x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: encoded(subject),
      issuer: ca.subject,
      notBefore,
      notAfter: addYears(now, LEAF_YEARS),
      signingAlgorithm: ALGORITHM,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(KU.digitalSignature | KU.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension(usages),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
        await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
        ...extra,
      ],
    });
  // The node serves HTTPS and, on the transport port, is client and server to its peers.
  const node = await leaf(
    INDEXER_NODE_DN,
    nodeKeys,
    [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
    [
      new x509.SubjectAlternativeNameExtension(
        indexerDnsNames(namespace).map((value) => ({ type: 'dns' as const, value })),
      ),
    ],
  );
  const admin = await leaf(INDEXER_ADMIN_DN, adminKeys, [x509.ExtendedKeyUsage.clientAuth], []);
  const k = INDEXER_TLS_SECRET.keys;
  return {
    [k.ca]: ca.toString('pem'),
    [k.node]: node.toString('pem'),
    [k.nodeKey]: await pkcs8Pem(nodeKeys.privateKey),
    [k.admin]: admin.toString('pem'),
    [k.adminKey]: await pkcs8Pem(adminKeys.privateKey),
  } as IndexerTlsData;
}

/** The DNS names of a certificate's subjectAltName, in order. */
export function dnsNamesOf(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4));
}

/**
 * Why a stored set cannot be kept for `namespace` at `now`, or undefined when it can: every key
 * present, parseable, chained to the CA, keys matching their certificates, the node certificate
 * naming exactly this namespace, and more than 30 days left on every certificate.
 */
export function indexerPkiProblem(
  data: Record<string, string> | undefined,
  namespace: string,
  now: Date,
): string | undefined {
  if (!data) return 'missing';
  const k = INDEXER_TLS_SECRET.keys;
  try {
    const ca = new X509Certificate(data[k.ca] ?? '');
    const node = new X509Certificate(data[k.node] ?? '');
    const admin = new X509Certificate(data[k.admin] ?? '');
    if (!ca.ca || !ca.verify(ca.publicKey)) return 'the CA is not a self-signed CA';
    if (!node.verify(ca.publicKey) || !admin.verify(ca.publicKey)) return 'not issued by its CA';
    if (!node.checkPrivateKey(createPrivateKey(data[k.nodeKey] ?? '')))
      return 'the node key does not match its certificate';
    if (!admin.checkPrivateKey(createPrivateKey(data[k.adminKey] ?? '')))
      return 'the admin key does not match its certificate';
    const wanted = indexerDnsNames(namespace);
    const names = dnsNamesOf(node);
    if (names.length !== wanted.length || wanted.some((n) => !names.includes(n)))
      return `the node certificate names ${names.join(', ')}`;
    const horizon = now.getTime() + RENEW_BEFORE_MS;
    for (const [what, cert] of [
      ['CA', ca],
      ['node', node],
      ['admin', admin],
    ] as const) {
      if (Date.parse(cert.validFrom) > now.getTime())
        return `the ${what} certificate is not yet valid`;
      if (Date.parse(cert.validTo) <= horizon)
        return `the ${what} certificate expires ${new Date(cert.validTo).toISOString()}`;
    }
    return undefined;
  } catch (error) {
    return `unreadable: ${(error as Error).message}`;
  }
}

export interface SecretAccess {
  readSecret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  putSecret(
    namespace: string,
    name: string,
    data: Record<string, string>,
    labels: Record<string, string>,
  ): Promise<'created' | 'replaced'>;
}

/**
 * Names one certificate set: a digest of its three certificates (each key belongs to its
 * certificate, so the keys add nothing). The pods that read the set carry it as a pod-template
 * annotation (indexer-tls-roll.ts), so a new set is a new pod template and the pods roll.
 */
export function indexerTlsRevision(data: Record<string, string>): string {
  const k = INDEXER_TLS_SECRET.keys;
  const digest = createHash('sha256');
  for (const key of [k.ca, k.node, k.admin]) digest.update(data[key] ?? '').update('\0');
  return digest.digest('hex').slice(0, 16);
}

/**
 * When the set was issued: its node certificate's notBefore plus the backdating (second
 * precision, as X.509 times are). Undefined when the certificate does not parse.
 */
export function indexerTlsIssuedAt(data: Record<string, string>): Date | undefined {
  try {
    const node = new X509Certificate(data[INDEXER_TLS_SECRET.keys.node] ?? '');
    return new Date(Date.parse(node.validFrom) + BACKDATE_MS);
  } catch {
    return undefined;
  }
}

/**
 * Keeps the namespace's `svc-indexer-tls` when it is fit for another 30 days, otherwise issues
 * and writes a new set (CA included: the CA never leaves the Secret, so a new one costs nothing
 * but the restart of the pods that read it). Safe to repeat on retry and resume. Returns the set
 * now in the Secret.
 *
 * A "CA change" is any set whose certificates no longer chain to the `root-ca.pem` beside them
 * (the CA replaced by hand, or a compromised CA swapped out): the whole set is issued anew under
 * a new CA. An operator asks for a re-issue by deleting the Secret.
 */
export async function ensureIndexerPki(
  secrets: SecretAccess,
  namespace: string,
  labels: Record<string, string>,
  now: Date,
): Promise<
  | { action: 'kept'; data: Record<string, string> }
  | { action: 'issued'; reason: string; data: Record<string, string> }
> {
  const current = await secrets.readSecret(namespace, INDEXER_TLS_SECRET.name);
  const reason = indexerPkiProblem(current, namespace, now);
  if (reason === undefined && current) return { action: 'kept', data: current };
  const data = await issueIndexerPki(namespace, now);
  await secrets.putSecret(namespace, INDEXER_TLS_SECRET.name, data, labels);
  return { action: 'issued', reason: reason ?? 'missing', data };
}
