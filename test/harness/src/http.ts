// Minimal HTTP(S) GET for readiness probes, without a client library.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface TlsClientAuth {
  ca: string;
  cert: string;
  key: string;
}

export interface GetResult {
  status: number;
  body: string;
}

export function get(url: string, tls?: TlsClientAuth, timeoutMs = 2000): Promise<GetResult> {
  return new Promise((resolve, reject) => {
    const request = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = request(url, { method: 'GET', agent: false, timeout: timeoutMs, ...(tls ?? {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}
