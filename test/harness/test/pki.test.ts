import { X509Certificate, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createClusterPki, issueCertificate } from '../src/pki.js';

describe('createClusterPki', () => {
  const pki = createClusterPki();
  const ca = new X509Certificate(pki.ca.certPem);

  it('makes a self-signed CA certificate', () => {
    expect(ca.ca).toBe(true);
    expect(ca.subject).toBe('CN=warmpool-test-ca');
    expect(ca.checkIssued(ca)).toBe(true);
    expect(ca.verify(ca.publicKey)).toBe(true);
  });

  it('signs the apiserver serving certificate for loopback and the in-cluster names', () => {
    const serving = new X509Certificate(pki.serving.certPem);
    expect(serving.ca).toBe(false);
    expect(serving.checkIssued(ca)).toBe(true);
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.checkPrivateKey(createPrivateKey(pki.serving.keyPem))).toBe(true);
    expect(serving.checkHost('localhost')).toBe('localhost');
    expect(serving.checkHost('kubernetes.default.svc')).toBe('kubernetes.default.svc');
    expect(serving.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serving.checkIP('::1')).toBe('::1');
    expect(serving.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
  });

  it('signs an admin client certificate in the system:masters group', () => {
    const admin = new X509Certificate(pki.admin.certPem);
    expect(admin.subject.split('\n').sort()).toEqual(['CN=admin', 'O=system:masters']);
    expect(admin.verify(ca.publicKey)).toBe(true);
    expect(admin.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
  });

  it('signs the front-proxy client certificate with its own CA', () => {
    const frontCa = new X509Certificate(pki.frontProxyCa.certPem);
    const client = new X509Certificate(pki.frontProxyClient.certPem);
    expect(client.verify(frontCa.publicKey)).toBe(true);
    expect(client.verify(ca.publicKey)).toBe(false);
    expect(client.subject).toBe('CN=front-proxy-client');
  });

  it('makes a service-account key pair that signs and verifies', () => {
    const data = Buffer.from('token');
    const signature = sign('sha256', data, createPrivateKey(pki.serviceAccount.privateKeyPem));
    expect(verify('sha256', data, createPublicKey(pki.serviceAccount.publicKeyPem), signature)).toBe(true);
  });

  it('gives every certificate a fresh serial and key', () => {
    const a = issueCertificate({ subject: { commonName: 'x' } });
    const b = issueCertificate({ subject: { commonName: 'x' } });
    expect(new X509Certificate(a.certPem).serialNumber).not.toBe(new X509Certificate(b.certPem).serialNumber);
    expect(a.keyPem).not.toBe(b.keyPem);
  });

  it('writes validity dates after 2049 as GeneralizedTime', () => {
    const longLived = new X509Certificate(
      issueCertificate({ subject: { commonName: 'x' }, validForDays: 365 * 40 }).certPem,
    );
    expect(new Date(longLived.validTo).getUTCFullYear()).toBeGreaterThan(2049);
  });
});
