// The peers file (the control plane's --federation-peers-file): the clusters
// this one federates with, each with credentials of its own.
//
//   { "peers": [ { "id": "east",
//                  "claimsUrl": "https://claims.east.example:8443",
//                  "tokenFile": "east/token",
//                  "acceptedTokenFile": "east/accepted-token" } ] }
//
// - id: the peer's cluster id (its --cluster-id, as its records on the hub name it).
// - claimsUrl + tokenFile: this cluster forwards Env claims to the peer, to that
//   origin only, presenting that token. The URL is an origin: the request path
//   is always warmpool's own, so no path, query, fragment or credentials.
// - acceptedTokenFile: the token the peer presents here; a request bearing it
//   is that peer's and nobody else's.
// Relative file names are taken from the peers file's directory.
import { z } from 'zod';

/** A peer's cluster id: a DNS subdomain-like name (it becomes part of node claim_refs and log lines). */
export const federationPeerIdSchema = z
  .string()
  .min(1)
  .max(63)
  .regex(
    /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/,
    'must be at most 63 characters of [a-z0-9.-], starting and ending with a letter or digit',
  );

/** A peer's claim API as the origin it is reached at (`scheme://host[:port]`, http or https). */
export const federationPeerClaimsUrlSchema = z.string().transform((raw, ctx): string => {
  const refuse = (message: string): never => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse(`${JSON.stringify(raw)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return refuse('must be an http:// or https:// URL');
  if (url.hostname === '') return refuse('must name a host');
  if (url.username !== '' || url.password !== '') return refuse('must not hold credentials (user:password@)');
  if (/[?#]/.test(raw)) return refuse('must not have a query or a fragment: the request path is warmpool’s own');
  if (url.pathname !== '/')
    return refuse('must be an origin (scheme://host[:port]) without a path: the request path is warmpool’s own');
  return url.origin;
});

export const federationPeerSchema = z
  .strictObject({
    id: federationPeerIdSchema,
    claimsUrl: federationPeerClaimsUrlSchema.optional(),
    tokenFile: z.string().min(1).optional(),
    acceptedTokenFile: z.string().min(1).optional(),
  })
  .superRefine((peer, ctx) => {
    if ((peer.claimsUrl === undefined) !== (peer.tokenFile === undefined))
      ctx.addIssue({ code: 'custom', message: 'claimsUrl and tokenFile go together (forwarding to the peer)' });
    if (peer.claimsUrl === undefined && peer.acceptedTokenFile === undefined)
      ctx.addIssue({
        code: 'custom',
        message:
          'a peer needs claimsUrl + tokenFile (claims are forwarded to it), acceptedTokenFile (it forwards here), or both',
      });
  });
export type FederationPeer = z.output<typeof federationPeerSchema>;

export const federationPeersFileSchema = z
  .strictObject({ peers: z.array(federationPeerSchema).max(256) })
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    for (const [i, peer] of file.peers.entries()) {
      if (seen.has(peer.id))
        ctx.addIssue({ code: 'custom', path: ['peers', i, 'id'], message: `peer ${peer.id} is listed twice` });
      seen.add(peer.id);
    }
  });
export type FederationPeersFile = z.output<typeof federationPeersFileSchema>;
