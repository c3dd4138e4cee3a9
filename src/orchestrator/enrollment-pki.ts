// @peculiar/x509 2.x resolves its ASN.1 parsers through tsyringe, which needs the Reflect
// metadata polyfill loaded first (a side-effect import, kept ahead of the library's).
import 'reflect-metadata';
import { createHash, createPrivateKey, webcrypto, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';
import { CA_YEARS, dnsNamesOf, LEAF_YEARS, RENEW_BEFORE_MS } from './indexer-pki.ts';
import {
  ALGORITHM,
  addYears,
  BACKDATE_MS,
  encoded,
  generateKeys,
  pkcs8Pem,
  serial,
} from './pki-primitives.ts';
import { ENROLLMENT_TLS_SECRET_NAME } from './render.ts';

/**
 * The certificate of the tenant manager's enrollment service (agent-auth → authd on 1515,
 * docs/enrollment.md "What svc does"). svc holds one CA per tenant in the install namespace
 * (`tenant-<id>-enrollment-ca`, its key never leaves that Secret) and issues the manager's
 * certificate from it into the tenant namespace (`svc-enrollment-tls`), which the chart mounts as
 * the manager's `etc/sslmanager.cert` / `.key`, the files authd serves by default. Agents get the
 * CA (`WAZUH_REGISTRATION_CA`) and check the manager's certificate against it and against the
 * address they dial, so the certificate names every address agents use. Re-issuing the manager's
 * certificate keeps the CA, so agents installed with it keep enrolling.
 */

/** svc's CA for one tenant's enrollment channel, in the install namespace. */
export const ENROLLMENT_CA_KEYS = { ca: 'ca.pem', key: 'ca-key.pem' } as const;

/** The manager's enrollment certificate, in the tenant namespace. */
export const ENROLLMENT_TLS_SECRET = {
  name: ENROLLMENT_TLS_SECRET_NAME,
  purpose: 'enrollment-tls',
  keys: { cert: 'sslmanager.cert', key: 'sslmanager.key', ca: 'root-ca.pem' },
} as const;

export const ENROLLMENT_CA_DN = 'CN=svc-tenant enrollment root CA,O=svc-tenant';
export const ENROLLMENT_MANAGER_DN = 'CN=monitor,OU=enrollment,O=svc-tenant';

export type EnrollmentCa = Record<
  (typeof ENROLLMENT_CA_KEYS)[keyof typeof ENROLLMENT_CA_KEYS],
  string
>;
export type EnrollmentTlsData = Record<
  (typeof ENROLLMENT_TLS_SECRET.keys)[keyof typeof ENROLLMENT_TLS_SECRET.keys],
  string
>;

const { KeyUsageFlags: KU } = x509;

/** A new CA for one tenant's enrollment channel (10 years, like the indexer's). */
export async function issueEnrollmentCa(now: Date): Promise<EnrollmentCa> {
  const keys = await generateKeys();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: encoded(ENROLLMENT_CA_DN),
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: addYears(now, CA_YEARS),
    signingAlgorithm: ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(KU.keyCertSign | KU.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    [ENROLLMENT_CA_KEYS.ca]: ca.toString('pem'),
    [ENROLLMENT_CA_KEYS.key]: await pkcs8Pem(keys.privateKey),
  };
}

/** Addresses split by kind: an IP literal is an IP SAN, anything else a DNS SAN. */
function subjectAltNames(names: readonly string[]) {
  return names.map((value) =>
    isIP(value) ? { type: 'ip' as const, value } : { type: 'dns' as const, value },
  );
}

/** The manager's enrollment certificate for `names`, signed by `ca` (2 years, server auth). */
export async function issueEnrollmentTls(
  ca: EnrollmentCa,
  names: readonly string[],
  now: Date,
): Promise<EnrollmentTlsData> {
  const caCert = new x509.X509Certificate(ca[ENROLLMENT_CA_KEYS.ca]);
  const caKey = await importPkcs8(ca[ENROLLMENT_CA_KEYS.key]);
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: encoded(ENROLLMENT_MANAGER_DN),
    issuer: caCert.subject,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: addYears(now, LEAF_YEARS),
    signingAlgorithm: ALGORITHM,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(KU.digitalSignature | KU.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
      new x509.SubjectAlternativeNameExtension(subjectAltNames(names)),
    ],
  });
  const k = ENROLLMENT_TLS_SECRET.keys;
  return {
    [k.cert]: cert.toString('pem'),
    [k.key]: await pkcs8Pem(keys.privateKey),
    [k.ca]: ca[ENROLLMENT_CA_KEYS.ca],
  } as EnrollmentTlsData;
}

function importPkcs8(pem: string): Promise<webcrypto.CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  return webcrypto.subtle.importKey('pkcs8', der, ALGORITHM, false, ['sign']);
}

/** The IP addresses of a certificate's subjectAltName, in order. */
function ipAddressesOf(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('IP Address:'))
    .map((entry) => entry.slice('IP Address:'.length));
}

/** Every name a certificate answers to (DNS names, then IP addresses). */
export function enrollmentNamesOf(cert: X509Certificate): string[] {
  return [...dnsNamesOf(cert), ...ipAddressesOf(cert)];
}

/** Why the CA cannot be kept at `now` (undefined: it can): a parseable self-signed CA, key matching, 30 days left. */
export function enrollmentCaProblem(
  data: Record<string, string> | undefined,
  now: Date,
): string | undefined {
  if (!data) return 'missing';
  try {
    const ca = new X509Certificate(data[ENROLLMENT_CA_KEYS.ca] ?? '');
    if (!ca.ca || !ca.verify(ca.publicKey)) return 'the CA is not a self-signed CA';
    if (!ca.checkPrivateKey(createPrivateKey(data[ENROLLMENT_CA_KEYS.key] ?? '')))
      return 'the CA key does not match its certificate';
    if (Date.parse(ca.validTo) <= now.getTime() + RENEW_BEFORE_MS)
      return `the CA expires ${new Date(ca.validTo).toISOString()}`;
    return undefined;
  } catch (error) {
    return `unreadable: ${(error as Error).message}`;
  }
}

/**
 * Why the manager's certificate cannot be kept (undefined: it can): issued by this CA, its key
 * matching, naming exactly `names`, and more than 30 days left.
 */
export function enrollmentTlsProblem(
  data: Record<string, string> | undefined,
  ca: EnrollmentCa,
  names: readonly string[],
  now: Date,
): string | undefined {
  if (!data) return 'missing';
  const k = ENROLLMENT_TLS_SECRET.keys;
  try {
    const authority = new X509Certificate(ca[ENROLLMENT_CA_KEYS.ca]);
    const cert = new X509Certificate(data[k.cert] ?? '');
    if (!cert.verify(authority.publicKey) || data[k.ca] !== ca[ENROLLMENT_CA_KEYS.ca])
      return 'not issued by the tenant’s enrollment CA';
    if (!cert.checkPrivateKey(createPrivateKey(data[k.key] ?? '')))
      return 'the key does not match its certificate';
    const held = enrollmentNamesOf(cert);
    if (held.length !== names.length || names.some((n) => !held.includes(n)))
      return `the certificate names ${held.join(', ')}; agents use ${names.join(', ')}`;
    if (Date.parse(cert.validTo) <= now.getTime() + RENEW_BEFORE_MS)
      return `the certificate expires ${new Date(cert.validTo).toISOString()}`;
    return undefined;
  } catch (error) {
    return `unreadable: ${(error as Error).message}`;
  }
}

/**
 * Names one issued certificate: the manager's pod template carries it (enrollment-cluster.ts),
 * so a new certificate is a new pod template and the manager restarts onto it.
 */
export function enrollmentTlsRevision(data: Record<string, string>): string {
  return createHash('sha256')
    .update(data[ENROLLMENT_TLS_SECRET.keys.cert] ?? '')
    .digest('hex')
    .slice(0, 16);
}

/** When the manager's certificate was issued (notBefore plus the backdating); undefined when unreadable. */
export function certificateIssuedAt(data: Record<string, string>): Date | undefined {
  try {
    const cert = new X509Certificate(data[ENROLLMENT_TLS_SECRET.keys.cert] ?? '');
    return new Date(Date.parse(cert.validFrom) + BACKDATE_MS);
  } catch {
    return undefined;
  }
}
