// @peculiar/x509 2.x resolves its ASN.1 parsers through tsyringe, which needs the Reflect
// metadata polyfill loaded first (a side-effect import, kept ahead of the library's).
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * What svc's two per-tenant PKIs share: the indexer's (indexer-pki.ts) and the enrollment
 * channel's (enrollment-pki.ts). Keys, serials and names are made the same way in both.
 */

// Node's webcrypto is the standard Crypto; the library's parameter type is the DOM's name for it.
x509.cryptoProvider.set(webcrypto as unknown as ReturnType<typeof x509.cryptoProvider.get>);

/** RSA 2048 with SHA-256: what the security plugin, filebeat and agent-auth accept (PKCS#8 keys). */
export const ALGORITHM = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
} as const;

/** notBefore lies this far back, so a peer whose clock is slightly behind accepts it. */
export const BACKDATE_MS = 5 * 60_000;

/**
 * An RFC 4514 string lists the RDNs last-encoded first; @peculiar/x509 encodes a name string in
 * reading order. Reversed, the certificate holds O, OU, CN in that order (as openssl's
 * `-subj /O=../OU=../CN=..` would), and reads back exactly as the DN constants.
 */
export function encoded(dn: string): string {
  return dn.split(',').reverse().join(',');
}

export function addYears(date: Date, years: number): Date {
  const out = new Date(date);
  out.setUTCFullYear(out.getUTCFullYear() + years);
  return out;
}

/** A positive 127-bit serial (RFC 5280 §4.1.2.2: unique per CA, at most 20 octets). */
export function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

export async function pkcs8Pem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join('\n')}\n-----END PRIVATE KEY-----\n`;
}

export const generateKeys = () =>
  webcrypto.subtle.generateKey(ALGORITHM, true, [
    'sign',
    'verify',
  ]) as Promise<webcrypto.CryptoKeyPair>;
