// The peers file (--federation-peers-file) as the control plane reads it, from
// real files: what it refuses at start, which peer a token is, where and with
// which token each peer is called, and token files re-read on change.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, silentLogger } from '@warmpool/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeerDirectory } from '../../src/federation/peers.js';

describe('the federation peers file', () => {
  let dir: string;
  const open: PeerDirectory[] = [];

  const write = (name: string, text: string): string => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  const peersFile = (peers: unknown[], name = 'peers.json'): string => write(name, JSON.stringify({ peers }));
  const load = (file: string, graceMs = 0): PeerDirectory => {
    const directory = new PeerDirectory(file, { clusterId: 'home', graceMs, logger: silentLogger });
    open.push(directory);
    return directory;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'warmpool-peers-'));
    write('east.token', 'to-east\n');
    write('from-east.token', 'from-east\n');
    write('from-west.token', 'from-west\n');
  });

  afterAll(() => {
    for (const directory of open) directory.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('knows each peer by its own token, and calls each only at its configured origin with the token for it', () => {
    const peers = load(
      peersFile([
        {
          id: 'east',
          claimsUrl: 'https://claims.east.example:8443/',
          tokenFile: 'east.token',
          acceptedTokenFile: 'from-east.token',
        },
        { id: 'west', acceptedTokenFile: join(dir, 'from-west.token') },
      ]),
    );
    expect(peers.ids).toEqual(['east', 'west']);
    expect(peers.authenticate('from-east')).toBe('east');
    expect(peers.authenticate('from-west')).toBe('west');
    // What this cluster presents to east is not a credential here.
    expect(peers.authenticate('to-east')).toBeUndefined();
    expect(peers.authenticate('anything')).toBeUndefined();
    const east = peers.outbound('east');
    expect(east?.origin).toBe('https://claims.east.example:8443');
    expect(east?.tokens.preferred).toBe('to-east');
    // west forwards here, but is never forwarded to; an id that is not listed is nobody.
    expect(peers.outbound('west')).toBeUndefined();
    expect(peers.outbound('evil')).toBeUndefined();
  });

  it('refuses at start, with the reason, what could send a token elsewhere or make identities ambiguous', () => {
    const refused = (peers: unknown[]): string => {
      try {
        load(peersFile(peers, 'refused.json'));
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(peers)}`);
    };
    const east = { id: 'east', tokenFile: 'east.token' };
    expect(refused([{ ...east, claimsUrl: 'http://127.0.0.1:47999/?swallow=' }])).toMatch(/query or a fragment/);
    expect(refused([{ ...east, claimsUrl: 'https://claims.example/#x' }])).toMatch(/query or a fragment/);
    expect(refused([{ ...east, claimsUrl: 'https://claims.example/v1/namespaces/' }])).toMatch(/without a path/);
    expect(refused([{ ...east, claimsUrl: 'https://user:pw@claims.example' }])).toMatch(/credentials/);
    expect(refused([{ ...east, claimsUrl: 'ftp://claims.example' }])).toMatch(/http:\/\/ or https:\/\//);
    expect(refused([{ ...east, claimsUrl: 'claims.example' }])).toMatch(/not a URL/);
    expect(refused([{ id: 'east', claimsUrl: 'https://claims.example' }])).toMatch(
      /claimsUrl and tokenFile go together/,
    );
    expect(refused([{ id: 'east' }])).toMatch(/acceptedTokenFile/);
    expect(refused([{ id: 'Not A Cluster', acceptedTokenFile: 'from-east.token' }])).toMatch(/peers\.0\.id/);
    expect(refused([{ id: 'home', acceptedTokenFile: 'from-east.token' }])).toMatch(/this cluster's own id/);
    expect(
      refused([
        { id: 'east', acceptedTokenFile: 'from-east.token' },
        { id: 'east', acceptedTokenFile: 'from-west.token' },
      ]),
    ).toMatch(/listed twice/);
    expect(refused([{ id: 'east', acceptedTokenFile: 'missing.token' }])).toMatch(/peer east: .*missing\.token/);
    expect(refused([{ id: 'east', acceptedTokenFile: 'from-east.token', token: 'inline' }])).toMatch(/token/);
    expect(() => load(write('not-json.json', '{peers:'))).toThrow(/not JSON/);
  });

  it('accepts neither of two peers that were given the same token', () => {
    write('same-a.token', 'same\n');
    write('same-b.token', 'same\n');
    const peers = load(
      peersFile(
        [
          { id: 'a', acceptedTokenFile: 'same-a.token' },
          { id: 'b', acceptedTokenFile: 'same-b.token' },
        ],
        'same.json',
      ),
    );
    expect(peers.authenticate('same')).toBeUndefined();
  });

  it('re-reads rotated tokens: the replaced one stays good for the grace only, both ways', () => {
    write('rot-out.token', 'out-1\n');
    write('rot-in.token', 'in-1\n');
    write('rot-in-strict.token', 'strict-1\n');
    const file = peersFile(
      [{ id: 'east', claimsUrl: 'http://127.0.0.1:1', tokenFile: 'rot-out.token', acceptedTokenFile: 'rot-in.token' }],
      'rot.json',
    );
    const graceful = load(file, 60_000);
    const strict = load(peersFile([{ id: 'east', acceptedTokenFile: 'rot-in-strict.token' }], 'rot-strict.json'), 0);
    write('rot-out.token', 'out-2\n');
    write('rot-in.token', 'in-2\n');
    write('rot-in-strict.token', 'strict-2\n');
    graceful.refresh();
    strict.refresh();
    expect(graceful.authenticate('in-2')).toBe('east');
    expect(graceful.authenticate('in-1')).toBe('east');
    expect(strict.authenticate('strict-2')).toBe('east');
    expect(strict.authenticate('strict-1')).toBeUndefined();
    const tokens = graceful.outbound('east')?.tokens;
    expect(tokens?.preferred).toBe('out-2');
    // Refused with the new token (the peer has not read it yet): the replaced one is tried.
    expect(tokens?.alternateTo('out-2')).toBe('out-1');
  });

  it('re-reads the peer list when it changes, and keeps the last good one when the new one is invalid', () => {
    const file = peersFile([{ id: 'east', acceptedTokenFile: 'from-east.token' }], 'list.json');
    const peers = load(file);
    writeFileSync(
      file,
      JSON.stringify({
        peers: [
          { id: 'east', acceptedTokenFile: 'from-east.token' },
          { id: 'west', acceptedTokenFile: 'from-west.token' },
        ],
      }),
    );
    peers.refresh();
    expect(peers.authenticate('from-west')).toBe('west');
    writeFileSync(file, JSON.stringify({ peers: [{ id: 'west', claimsUrl: 'http://x/?q=' }] }));
    peers.refresh();
    expect(peers.ids).toEqual(['east', 'west']);
    expect(peers.authenticate('from-east')).toBe('east');
  });
});
