// Bearer tokens as every process reads them: from flags, env, files and the
// Authorization header.

/** The environment variable the node agent and the control plane read the fleet token from, without --token-file. */
export const FLEET_TOKEN_ENV = 'WARMPOOL_API_TOKEN';

/**
 * A configured token as used: surrounding whitespace (a file's trailing newline) is not part of it; empty or blank
 * means none.
 */
export function normalizeToken(value: string | undefined): string | undefined {
  const token = value?.trim();
  return token === undefined || token === '' ? undefined : token;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The token of an `Authorization: Bearer <token>` header, if any. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return BEARER.exec(header)?.[1];
}
