// Which sandbox a request names: upstream's headers X-Sandbox-ID (the
// Sandbox's name), X-Sandbox-Namespace (default `default`) and X-Sandbox-Port
// (default 8888), checked as upstream's router checks them (DNS labels, a
// port in range). A warmpool sandbox serves one runtime, so only the runtime
// port is taken. Headers that would let a caller pick where the router dials
// (X-Sandbox-Pod-IP, X-Sandbox-UID) are ignored: the route always comes from
// the Kubernetes API.
import {
  DEFAULT_SANDBOX_NAMESPACE,
  isDnsLabel,
  SANDBOX_ID_HEADER,
  SANDBOX_NAMESPACE_HEADER,
  SANDBOX_PORT_HEADER,
  SANDBOX_TIMEOUT_HEADER,
} from '@warmpool/api';
import { refusal, type Refusal } from './refusal.js';

export interface Target {
  /** The Sandbox's (and its SandboxClaim's) name. */
  name: string;
  namespace: string;
  /** The client's own timeout (X-Sandbox-Timeout), in ms; undefined when absent or unusable. */
  clientTimeoutMs: number | undefined;
}

export type HeaderReader = (name: string) => string | undefined;

export function targetOf(header: HeaderReader, runtimePort: number): Target | Refusal {
  const name = header(SANDBOX_ID_HEADER);
  if (name === undefined || name === '') return refusal('InvalidHeader', 'X-Sandbox-ID header is required.');
  if (!isDnsLabel(name)) return refusal('InvalidHeader', 'Invalid sandbox ID format.');
  const namespace = header(SANDBOX_NAMESPACE_HEADER) || DEFAULT_SANDBOX_NAMESPACE;
  if (!isDnsLabel(namespace)) return refusal('InvalidHeader', 'Invalid namespace format.');
  const rawPort = header(SANDBOX_PORT_HEADER);
  if (rawPort !== undefined && rawPort !== '') {
    const port = /^\d{1,5}$/.test(rawPort) ? Number(rawPort) : NaN;
    if (!(port >= 1 && port <= 65535)) return refusal('InvalidHeader', 'Invalid port format.');
    if (port !== runtimePort)
      return refusal('UnsupportedPort', `a warmpool sandbox serves its runtime on port ${runtimePort} only`);
  }
  const timeout = Number(header(SANDBOX_TIMEOUT_HEADER));
  const clientTimeoutMs = Number.isFinite(timeout) && timeout > 0 ? Math.ceil(timeout * 1000) : undefined;
  return { name, namespace, clientTimeoutMs };
}
