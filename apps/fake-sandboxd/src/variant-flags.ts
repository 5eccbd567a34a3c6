// The list-valued flags of the process, read into the core's and the auth's
// options: mesh peers and tenants.
import { ConfigError, hostPortFlag } from '@warmpool/runtime';

/** `--redirect-peers 10.0.0.6:7777,10.0.0.7:7777` → the peers (each a host:port, as the daemon names them). */
export function parseRedirectPeers(text: string | undefined): string[] {
  if (text === undefined || text.trim() === '') return [];
  return text.split(',').map((peer) => {
    const trimmed = peer.trim();
    hostPortFlag('--redirect-peers', trimmed);
    return trimmed;
  });
}

/** `--tenants team-a=tok1,team-b=tok2` → name → token; names and tokens non-empty, each name and token once. */
export function parseTenants(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const tenants: Record<string, string> = {};
  const tokens = new Set<string>();
  for (const entry of text.split(',')) {
    const eq = entry.indexOf('=');
    const name = entry.slice(0, eq).trim();
    const token = entry.slice(eq + 1).trim();
    if (eq <= 0 || name === '' || token === '') throw new ConfigError(`--tenants: "${entry}" is not NAME=TOKEN`);
    if (name in tenants) throw new ConfigError(`--tenants: tenant ${name} twice`);
    if (tokens.has(token)) throw new ConfigError(`--tenants: two tenants share a token`);
    tenants[name] = token;
    tokens.add(token);
  }
  return tenants;
}
