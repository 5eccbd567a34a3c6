// The local stack's sandbox router (upstream's router API) on 127.0.0.1. A
// request without a token acts as the demo ServiceAccount, so upstream's
// clients work against it unmodified.
import { APP_ENTRYPOINTS, waitForHttp } from './stack-apps.js';
import { DEMO_ACCOUNT } from './stack-claims.js';
import type { StackContext } from './stack-parts.js';
import { preferredOrFreePort, takenNote } from './stack-ports.js';

/** Starts the router on `wantedPort` (0 = any; a taken one is replaced by a free one); resolves with its URL once ready. */
export async function startRouter(
  { kubeconfig, namespace, parts, log }: StackContext,
  wantedPort: number,
): Promise<string> {
  const routerPort = await preferredOrFreePort('127.0.0.1', wantedPort);
  const routerUrl = `http://127.0.0.1:${routerPort.port}`;
  log(`starting the sandbox router on ${routerUrl}${takenNote(wantedPort, routerPort)}`);
  const router = parts.startApp('router', APP_ENTRYPOINTS.router, [
    `--kubeconfig=${kubeconfig}`,
    `--listen=127.0.0.1:${routerPort.port}`,
    `--tokenless-user=system:serviceaccount:${namespace}:${DEMO_ACCOUNT}`,
  ]);
  await waitForHttp(router, `${routerUrl}/readyz`);
  return routerUrl;
}
