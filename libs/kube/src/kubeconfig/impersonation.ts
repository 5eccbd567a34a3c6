// The Impersonate-* headers of a kubeconfig user (as, as-groups, as-uid,
// as-user-extra), as client-go sends them. All or nothing: dropping a group or
// an extra (a scope) would run the request with more rights than asked for.
import type { KubeconfigUser } from './file.js';

export type Headers = Record<string, string | string[]>;

export function impersonationHeaders(user: KubeconfigUser): Headers {
  const headers: Headers = {};
  if (user.as) headers['Impersonate-User'] = user.as;
  const groups = user['as-groups'] ?? [];
  if (groups.length > 0) headers['Impersonate-Group'] = groups;
  if (user['as-uid']) headers['Impersonate-Uid'] = user['as-uid'];
  for (const [key, values] of Object.entries(user['as-user-extra'] ?? {}))
    if (values.length > 0) headers[`Impersonate-Extra-${escapeHeaderKey(key)}`] = values;
  return headers;
}

/** client-go's headerKeyEscape: every byte that may not appear in a header name, as %XX. */
function escapeHeaderKey(key: string): string {
  let escaped = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const char = String.fromCharCode(byte);
    escaped += /[A-Za-z0-9!#$&'*+\-.^_`|~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return escaped;
}
