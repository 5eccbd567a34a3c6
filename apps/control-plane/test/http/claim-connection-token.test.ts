// The claim API's callers over keep-alive connections: a header a connection
// sent before is not hashed again for its TokenReview key
// (ConnectionTokenKeys), which must change no answer. What is remembered is
// the key, never a verdict: the review cache (its TTL, its sharing) still
// decides, so a token revoked at the apiserver is refused once its review
// expires, on a connection that remembers its key too. Peers are recognized
// first, as before. The reviewer is the real KubeAccessReviewer over a
// stand-in apiserver that counts TokenReviews; hashes are counted on the
// reviewer's tokenKey.
import { KubeAccessReviewer, ReviewUnavailable, type KubeRequest, type UserInfo } from '@warmpool/kube';
import { describe, expect, it, vi } from 'vitest';
import { ClaimCallers } from '../../src/http/claims/access.js';
import { isRefusal, type Caller, type Refusal } from '../../src/http/claims/answers.js';

const TOKEN_REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';

/** The apiserver's TokenReview: the tokens in `valid` are their users; `down` answers nothing. */
class Apiserver {
  readonly valid = new Map<string, UserInfo>([
    ['alice-token', { username: 'alice' }],
    ['bob-token', { username: 'bob' }],
  ]);
  /** The token of every TokenReview asked, in order. */
  readonly reviewed: string[] = [];
  down = false;

  request<R>(req: KubeRequest): Promise<R> {
    if (req.path !== TOKEN_REVIEWS) return Promise.reject(new Error(`unexpected ${req.method} ${req.path}`));
    const { token } = (req.body as { spec: { token: string } }).spec;
    this.reviewed.push(token);
    if (this.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    const user = this.valid.get(token);
    const status = user === undefined ? { authenticated: false } : { authenticated: true, user };
    return Promise.resolve({ status } as R);
  }
}

function callers(peerTokens: Record<string, string> = {}): {
  callers: ClaimCallers;
  apiserver: Apiserver;
  clock: { now: number };
  /** How many tokens were hashed into a key. */
  hashes: () => number;
  /** The peers' accepted tokens (token → peer id), changed in place. */
  peers: Map<string, string>;
} {
  const apiserver = new Apiserver();
  const clock = { now: 0 };
  const reviewer = new KubeAccessReviewer({ transport: apiserver, ttlMs: 10_000, now: () => clock.now });
  // Spied before ClaimCallers takes the reviewer's tokenKey, so every hash, there and in authenticate, is counted.
  const tokenKey = vi.spyOn(reviewer, 'tokenKey');
  const peers = new Map(Object.entries(peerTokens));
  return {
    callers: new ClaimCallers(reviewer, { authenticate: (token) => peers.get(token) }),
    apiserver,
    clock,
    hashes: () => tokenKey.mock.calls.length,
    peers,
  };
}

/** Who the answer names: the username (and peer), or the refusal's reason. */
function who(answer: Caller | Refusal): string {
  if (isRefusal(answer)) return answer.refused;
  return answer.peer === undefined ? answer.user.username : `peer ${answer.peer}`;
}

describe('the claim callers on a keep-alive connection', () => {
  it("hashes a connection's header once: the same header on that connection again is keyed from memory", async () => {
    const { callers: c, apiserver, hashes } = callers();
    const connection = {};
    for (let i = 0; i < 3; i++) expect(who(await c.identify('Bearer alice-token', connection))).toBe('alice');
    expect(hashes()).toBe(1);
    expect(apiserver.reviewed).toStrictEqual(['alice-token']);
  });

  it('hashes a different header on that connection, each reviewed as its own token', async () => {
    const { callers: c, apiserver, hashes } = callers();
    const connection = {};
    const answers = [];
    for (const header of ['Bearer alice-token', 'Bearer bob-token', 'Bearer alice-token', 'bearer  alice-token'])
      answers.push(who(await c.identify(header, connection)));
    expect(answers).toStrictEqual(['alice', 'bob', 'alice', 'alice']);
    // One header is remembered per connection: each change is hashed, another spelling of a token included.
    expect(hashes()).toBe(4);
    // The key is the token's, not the header's: another spelling of alice's token finds her cached review.
    expect(apiserver.reviewed).toStrictEqual(['alice-token', 'bob-token']);
  });

  it("does not use one connection's header for another, nor for a request with no connection", async () => {
    const { callers: c, apiserver, hashes } = callers();
    expect(who(await c.identify('Bearer alice-token', {}))).toBe('alice');
    expect(who(await c.identify('Bearer alice-token', {}))).toBe('alice');
    expect(who(await c.identify('Bearer alice-token'))).toBe('alice');
    expect(who(await c.identify('Bearer alice-token'))).toBe('alice');
    expect(hashes()).toBe(4);
    // The review cache is shared by every connection, as before.
    expect(apiserver.reviewed).toStrictEqual(['alice-token']);
  });

  it('reviews a remembered header again once its review expires: a token revoked meanwhile is refused', async () => {
    const { callers: c, apiserver, clock, hashes } = callers();
    const connection = {};
    expect(who(await c.identify('Bearer alice-token', connection))).toBe('alice');
    apiserver.valid.delete('alice-token');
    // Within the review's 10 s the cached review answers, as it always did.
    clock.now = 9_999;
    expect(who(await c.identify('Bearer alice-token', connection))).toBe('alice');
    clock.now = 10_000;
    expect(who(await c.identify('Bearer alice-token', connection))).toBe('Unauthenticated');
    expect(who(await c.identify('Bearer alice-token', connection))).toBe('Unauthenticated');
    expect(apiserver.reviewed).toStrictEqual(['alice-token', 'alice-token']);
    // The key was remembered all along; the verdict never was.
    expect(hashes()).toBe(1);
  });

  it('refuses a refused token every time, on a connection that sent it before and after a valid header', async () => {
    const { callers: c, apiserver, clock } = callers();
    const connection = {};
    const answers = [];
    for (const header of [
      'Bearer mallory-token',
      'Bearer mallory-token',
      'Bearer alice-token',
      'Bearer mallory-token',
      'Bearer alice-tokeN',
      'Bearer alice-toke',
      'Bearer alice-token-',
      'Basic YWxpY2U6YWxpY2UtdG9rZW4=',
      'alice-token',
      undefined,
    ])
      answers.push(who(await c.identify(header, connection)));
    expect(answers).toStrictEqual([
      'Unauthenticated',
      'Unauthenticated',
      'alice',
      'Unauthenticated',
      'Unauthenticated',
      'Unauthenticated',
      'Unauthenticated',
      'Unauthenticated',
      'Unauthenticated',
      'Unauthenticated',
    ]);
    // A refused token made valid at the apiserver is admitted once its refusal expires, as before.
    apiserver.valid.set('mallory-token', { username: 'mallory' });
    expect(who(await c.identify('Bearer mallory-token', connection))).toBe('Unauthenticated');
    clock.now = 10_000;
    expect(who(await c.identify('Bearer mallory-token', connection))).toBe('mallory');
  });

  it('leaves an undecided review undecided (the apiserver down), and asks again on the next request', async () => {
    const { callers: c, apiserver } = callers();
    const connection = {};
    apiserver.down = true;
    await expect(c.identify('Bearer alice-token', connection)).rejects.toBeInstanceOf(ReviewUnavailable);
    await expect(c.identify('Bearer alice-token', connection)).rejects.toBeInstanceOf(ReviewUnavailable);
    apiserver.down = false;
    expect(who(await c.identify('Bearer alice-token', connection))).toBe('alice');
    expect(apiserver.reviewed).toStrictEqual(['alice-token', 'alice-token', 'alice-token']);
  });

  it('shares one review among concurrent requests, whether their keys were hashed or remembered', async () => {
    const { callers: c, apiserver } = callers();
    const connection = {};
    const answers = await Promise.all([
      c.identify('Bearer alice-token', connection),
      c.identify('Bearer alice-token', connection),
      c.identify('Bearer alice-token', {}),
      c.identify('Bearer alice-token'),
    ]);
    expect(answers.map(who)).toStrictEqual(['alice', 'alice', 'alice', 'alice']);
    expect(apiserver.reviewed).toStrictEqual(['alice-token']);
  });

  it("recognizes a peer's token first, on every request, and never reviews or hashes it", async () => {
    const { callers: c, apiserver, hashes, peers } = callers({ 'east-token': 'east' });
    const connection = {};
    const answers = [];
    for (const header of ['Bearer east-token', 'Bearer alice-token', 'Bearer east-token', 'Bearer east-token'])
      answers.push(who(await c.identify(header, connection)));
    expect(answers).toStrictEqual(['peer east', 'alice', 'peer east', 'peer east']);
    expect(hashes()).toBe(1);
    expect(apiserver.reviewed).toStrictEqual(['alice-token']);
    // The peer's token rotated out (its grace over): the header is now an unknown token, reviewed as any other.
    peers.delete('east-token');
    expect(who(await c.identify('Bearer east-token', connection))).toBe('Unauthenticated');
    // And a header whose key the connection remembers is the peer's once its token is a peer's.
    peers.set('east-token', 'east');
    expect(who(await c.identify('Bearer east-token', connection))).toBe('peer east');
  });

  it('answers every request as it does without a connection', async () => {
    const headers = [
      'Bearer alice-token',
      'Bearer alice-token',
      'Bearer east-token',
      'Bearer mallory-token',
      'Bearer alice-token',
      'revoke alice',
      'Bearer alice-token',
      'tick',
      'Bearer alice-token',
      'Bearer bob-token',
      'Bearer mallory-token',
      'Bearer bob-token',
    ];
    /** The answers to `headers` (and their events) on one connection, or with none. */
    async function run(connection: object | undefined): Promise<string[]> {
      const { callers: c, apiserver, clock } = callers({ 'east-token': 'east' });
      const answers = [];
      for (const header of headers) {
        if (header === 'revoke alice') apiserver.valid.delete('alice-token');
        else if (header === 'tick') clock.now += 10_000;
        else answers.push(who(await c.identify(header, connection)));
      }
      return answers;
    }
    const onConnection = await run({});
    expect(onConnection).toStrictEqual(await run(undefined));
    expect(onConnection).toStrictEqual([
      'alice',
      'alice',
      'peer east',
      'Unauthenticated',
      'alice',
      'alice',
      'Unauthenticated',
      'bob',
      'Unauthenticated',
      'bob',
    ]);
  });
});
