// The Sandbox API's serving certificate: the given files, or, when none are
// given, a self-signed one made at start (valid a year, for localhost, the
// loopback addresses, this host's name and any extra names). A self-signed
// certificate differs per replica and per start, so the APIService cannot
// pin it with a caBundle: the chart then sets insecureSkipTLSVerify (as
// metrics-server does by default); give a certificate to verify instead.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { issueCertificate } from '@warmpool/runtime';

export interface ServingCert {
  cert: string;
  key: string;
  selfSigned: boolean;
}

export function servingCert(options: {
  certFile?: string;
  keyFile?: string;
  extraNames?: readonly string[];
}): ServingCert {
  if (options.certFile !== undefined && options.keyFile !== undefined) {
    return {
      cert: readFileSync(options.certFile, 'utf8'),
      key: readFileSync(options.keyFile, 'utf8'),
      selfSigned: false,
    };
  }
  const issued = issueCertificate({
    subject: { commonName: 'warmpool-sandbox-api' },
    usages: ['server'],
    dnsNames: [...new Set(['localhost', hostname(), ...(options.extraNames ?? [])])],
    ipAddresses: ['127.0.0.1', '::1'],
    validForDays: 365,
  });
  return { cert: issued.certPem, key: issued.keyPem, selfSigned: true };
}
