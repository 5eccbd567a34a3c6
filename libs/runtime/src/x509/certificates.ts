// X.509 certificates made in-process with Node's crypto and a small DER
// writer: no openssl CLI. ECDSA P-256 keys because they are generated in
// microseconds and every Go TLS stack accepts them. Used by the test harness
// (a throw-away cluster's PKI) and by servers that make their own self-signed
// serving certificate when none is given.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  type KeyObject,
} from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import {
  bitString,
  boolean,
  explicit,
  implicit,
  namedBits,
  objectId,
  octetString,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
} from './der.js';

export interface KeyPair {
  privateKeyPem: string;
  publicKeyPem: string;
}

export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
}

export interface Subject {
  commonName: string;
  organizations?: string[];
}

export interface CertificateRequest {
  subject: Subject;
  /** Absent: self-signed. */
  issuer?: IssuedCertificate;
  isCa?: boolean;
  usages?: Array<'server' | 'client'>;
  dnsNames?: string[];
  ipAddresses?: string[];
  validForDays?: number;
}

const OID = {
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

const KEY_USAGE = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

export function generateKeyPair(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

function name(subject: Subject): Buffer {
  // Organizations first, as Go's pkix.Name writes them; the issuer/subject bytes
  // must match exactly between a CA and what it signs, and both come from here.
  const rdns = (subject.organizations ?? []).map((o) => set(sequence(objectId(OID.organization), utf8String(o))));
  rdns.push(set(sequence(objectId(OID.commonName), utf8String(subject.commonName))));
  return sequence(...rdns);
}

function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`not an IP address: ${ip}`);
  const [head = '', tail] = ip.split('::');
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? sequence(objectId(oid), boolean(true), octetString(value))
    : sequence(objectId(oid), octetString(value));
}

function keyId(publicKey: KeyObject): Buffer {
  return createHash('sha1')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest();
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

function subjectOfIssuer(issuer: IssuedCertificate): { der: Buffer; key: KeyObject } {
  // The issuer's Name is read back from its certificate's DER so the bytes are identical.
  const der = Buffer.from(issuer.certPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  return { der: readSubject(der), key: createPrivateKey(issuer.keyPem) };
}

/** Walks Certificate → TBSCertificate → the 6th field (subject), by DER lengths. */
function readSubject(certDer: Buffer): Buffer {
  const header = (buf: Buffer, at: number): { start: number; end: number } => {
    const first = buf[at + 1] ?? 0;
    if (first < 0x80) return { start: at + 2, end: at + 2 + first };
    const n = first & 0x7f;
    let len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (buf[at + 2 + i] ?? 0);
    return { start: at + 2 + n, end: at + 2 + n + len };
  };
  const tbs = header(certDer, header(certDer, 0).start);
  let at = tbs.start;
  // version [0], serial, signature alg, issuer, validity → subject is the sixth element.
  for (let i = 0; i < 5; i++) at = header(certDer, at).end;
  return certDer.subarray(at, header(certDer, at).end);
}

export function issueCertificate(request: CertificateRequest): IssuedCertificate {
  const keys = generateKeyPair();
  const publicKey = createPublicKey(keys.publicKeyPem);
  const issuer = request.issuer ? subjectOfIssuer(request.issuer) : undefined;
  const signingKey = issuer?.key ?? createPrivateKey(keys.privateKeyPem);
  const issuerName = issuer?.der ?? name(request.subject);
  const authorityKeyId = keyId(request.issuer ? createPublicKey(request.issuer.keyPem) : publicKey);

  const now = Date.now();
  // Back-dated an hour so small clock differences never make a fresh cert "not yet valid".
  const notBefore = new Date(now - 3600_000);
  const notAfter = new Date(now + (request.validForDays ?? 365) * 86_400_000);
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01;

  const extensions = [
    extension(OID.basicConstraints, true, request.isCa ? sequence(boolean(true)) : sequence()),
    extension(
      OID.keyUsage,
      true,
      namedBits(
        request.isCa
          ? [KEY_USAGE.digitalSignature, KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign]
          : [KEY_USAGE.digitalSignature, KEY_USAGE.keyEncipherment],
      ),
    ),
    extension(OID.subjectKeyId, false, octetString(keyId(publicKey))),
    extension(OID.authorityKeyId, false, sequence(implicit(0, authorityKeyId))),
  ];
  const usages = request.usages ?? [];
  if (usages.length > 0) {
    extensions.push(
      extension(
        OID.extKeyUsage,
        false,
        sequence(...usages.map((u) => objectId(u === 'server' ? OID.serverAuth : OID.clientAuth))),
      ),
    );
  }
  const altNames = [
    ...(request.dnsNames ?? []).map((dns) => implicit(2, Buffer.from(dns, 'ascii'))),
    ...(request.ipAddresses ?? []).map((ip) => implicit(7, ipBytes(ip))),
  ];
  if (altNames.length > 0) extensions.push(extension(OID.subjectAltName, false, sequence(...altNames)));

  const signatureAlgorithm = sequence(objectId(OID.ecdsaWithSha256));
  const tbs = sequence(
    explicit(0, smallInteger(2)),
    unsignedInteger(serial),
    signatureAlgorithm,
    issuerName,
    sequence(time(notBefore), time(notAfter)),
    name(request.subject),
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions)),
  );
  const signature = sign('sha256', tbs, signingKey);
  const cert = sequence(tbs, signatureAlgorithm, bitString(signature));
  return { certPem: pem('CERTIFICATE', cert), keyPem: keys.privateKeyPem };
}
