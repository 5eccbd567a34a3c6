// Where the bearer token comes from. The claim API accepts any token the
// cluster's TokenReview accepts: in a pod, the projected ServiceAccount token
// (re-read on every call, since kubelet rotates it); outside, a token from the
// kubeconfig or a file (`kubectl create token <sa> > token`).
import { existsSync, readFileSync } from 'node:fs';
import { ConfigurationError } from './errors.js';
import { readKubeContext } from './kubeconfig.js';

/** Returns the token to present now. */
export type TokenSource = () => string;

/** Where kubelet projects a pod's ServiceAccount token. */
export const IN_CLUSTER_TOKEN_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** A token file, read on every call (a projected token is rotated in place). */
export function tokenFromFile(path: string): TokenSource {
  return () => {
    let token: string;
    try {
      token = readFileSync(path, 'utf8').trim();
    } catch (error) {
      throw new ConfigurationError(`cannot read the token file ${path}: ${(error as Error).message}`, { cause: error });
    }
    if (token === '') throw new ConfigurationError(`the token file ${path} is empty`);
    return token;
  };
}

/** The bearer token of a kubeconfig context (its `token` or `tokenFile`). */
export function tokenFromKubeconfig(path?: string, context?: string): TokenSource {
  const ctx = readKubeContext(path, context);
  if (ctx.token === undefined)
    throw new ConfigurationError(
      'the kubeconfig user has no token or tokenFile (a client certificate or exec plugin cannot call the claim API); ' +
        'use a token file, e.g. kubectl create token <serviceaccount> > token',
    );
  return ctx.token;
}

/**
 * The first that is there: `WARMPOOL_TOKEN`, the file `WARMPOOL_TOKEN_FILE`, the pod's projected ServiceAccount
 * token, the kubeconfig's token.
 */
export function defaultTokenSource(): TokenSource {
  const token = process.env['WARMPOOL_TOKEN'];
  if (token) return () => token;
  const file = process.env['WARMPOOL_TOKEN_FILE'];
  if (file) return tokenFromFile(file);
  if (existsSync(IN_CLUSTER_TOKEN_FILE)) return tokenFromFile(IN_CLUSTER_TOKEN_FILE);
  return tokenFromKubeconfig();
}
