// Peers files for federated clusters (the control plane's --federation-peers-file):
// each cluster lists every other one, and each direction between two
// clusters has a token of its own (`<from>-to-<to>.token`), so no token is
// shared by more than the two clusters it connects.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FederationMember {
  id: string;
  /** Its claim API origin; without one no other cluster forwards claims to it (it may still forward to them). */
  claimsUrl?: string | undefined;
}

/** Writes one peers file per cluster and the tokens they name into `dir`; answers each cluster's peers file. */
export function writeFederationPeers(dir: string, clusters: readonly FederationMember[]): Map<string, string> {
  mkdirSync(dir, { recursive: true });
  const tokenFile = (from: string, to: string): string => `${from}-to-${to}.token`;
  for (const from of clusters)
    for (const to of clusters)
      if (from.id !== to.id)
        writeFileSync(join(dir, tokenFile(from.id, to.id)), `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  const files = new Map<string, string>();
  for (const self of clusters) {
    const peers = clusters
      .filter((peer) => peer.id !== self.id)
      .map((peer) => ({
        id: peer.id,
        ...(peer.claimsUrl !== undefined ? { claimsUrl: peer.claimsUrl, tokenFile: tokenFile(self.id, peer.id) } : {}),
        acceptedTokenFile: tokenFile(peer.id, self.id),
      }));
    const file = join(dir, `${self.id}.peers.json`);
    writeFileSync(file, `${JSON.stringify({ peers }, null, 2)}\n`, { mode: 0o600 });
    files.set(self.id, file);
  }
  return files;
}
