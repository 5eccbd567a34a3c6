// The sandboxd wire schemas against the real daemon's shapes (docs/sandboxd.md):
// answers parse whatever fields a newer daemon adds, requests are refused where
// the daemon refuses them.
import { describe, expect, it } from 'vitest';
import {
  claimAnswerSchema,
  claimGrantSchema,
  claimRedirectSchema,
  claimRequestSchema,
  claimResponseSchema,
  isClaimRedirect,
  nodeInfoSchema,
  poolTargetSchema,
  SANDBOX_NETS,
  SANDBOX_SIZES,
  sandboxdListSchema,
  sandboxdRowSchema,
  sandboxRowSchema,
  setPoolsRequestSchema,
  strictSetPoolsRequestSchema,
} from '../src/index.js';

const GRANT = { id: 'sb_1', token: 'tok', deadline: '2026-07-06T00:05:00.123456789Z', owner_addr: '10.0.0.5:7777' };
const ROW = { id: 'sb_1', key: { template: 'base:24.04', net: 'none', size: 'small' }, deadline: GRANT.deadline };

function messages(result: { success: boolean; error?: { issues: Array<{ message: string }> } }): string {
  return (result.error?.issues ?? []).map((i) => i.message).join('; ');
}

describe('claim answers', () => {
  it('parse a grant carrying every field a newer daemon adds, and keep the known ones', () => {
    const answer = {
      ...GRANT,
      template_digest: 'sha256:abc',
      from_checkpoint: 'ck_1',
      net_route: 'relay',
      volumes: [
        { name: 'imagenet', mount: '/volumes/imagenet' },
        { name: 'db', mount: '/db', mode: 'rw' },
      ],
      some_future_field: { nested: true },
    };
    const parsed = claimGrantSchema.parse(answer);
    expect(parsed).toMatchObject({ id: 'sb_1', template_digest: 'sha256:abc', net_route: 'relay' });
    expect(parsed).not.toHaveProperty('some_future_field');
  });

  it('parse a grant without owner_addr (a daemon without an advertise address)', () => {
    const { owner_addr: _omitted, ...answer } = GRANT;
    expect(claimGrantSchema.parse(answer).owner_addr).toBeUndefined();
    // The older name still insists on an owner, for code that needs one.
    expect(claimResponseSchema.safeParse(answer).success).toBe(false);
  });

  it('parse a grant whose owner_addr is a full origin (client_advertise)', () => {
    const parsed = claimGrantSchema.parse({ ...GRANT, owner_addr: 'https://node-a.example:8443' });
    expect(parsed.owner_addr).toBe('https://node-a.example:8443');
  });

  it('tell a redirect from a grant, with require_promoted carried when present', () => {
    const redirect = claimAnswerSchema.parse({ redirect: ['10.0.0.6:7777', '10.0.0.7:7777'], require_promoted: true });
    expect(isClaimRedirect(redirect)).toBe(true);
    expect(redirect).toEqual({ redirect: ['10.0.0.6:7777', '10.0.0.7:7777'], require_promoted: true });
    expect(isClaimRedirect(claimAnswerSchema.parse(GRANT))).toBe(false);
    // A redirect is never a grant, so code reading grants cannot mistake one for a sandbox.
    expect(claimGrantSchema.safeParse({ redirect: ['10.0.0.6:7777'] }).success).toBe(false);
    expect(claimRedirectSchema.safeParse({ redirect: [] }).success).toBe(false);
  });
});

describe('claim requests', () => {
  it('default net and size, and carry no_redirect and require_promoted', () => {
    expect(claimRequestSchema.parse({ template: 'base', no_redirect: true, require_promoted: true })).toEqual({
      template: 'base',
      net: 'none',
      size: 'small',
      no_redirect: true,
      require_promoted: true,
    });
  });

  it.each(SANDBOX_NETS.flatMap((net) => SANDBOX_SIZES.map((size) => [net, size])))(
    'accept net %s size %s',
    (net, size) => {
      expect(claimRequestSchema.safeParse({ template: 'base', net, size }).success).toBe(true);
    },
  );

  it('refuse a net or a size outside the closed sets', () => {
    expect(messages(claimRequestSchema.safeParse({ template: 'base', net: 'gpu' }))).toMatch(/unknown net shape/);
    expect(messages(claimRequestSchema.safeParse({ template: 'base', size: 'huge' }))).toMatch(/unknown size/);
  });
});

describe('sandbox rows', () => {
  it('parse rows without claimed_at, with the fields a newer daemon adds', () => {
    const list = sandboxdListSchema.parse({
      sandboxes: [
        ROW,
        { ...ROW, id: 'sb_2', claimed_at: GRANT.deadline, hibernated: true, archived: false, tenant: 'team-a' },
        { ...ROW, id: 'sb_3', metadata: { owner: 'x' }, volumes: [{ name: 'v' }], unknown_later: 1 },
      ],
    });
    expect(list.sandboxes.map((r) => r.claimed_at)).toEqual([undefined, GRANT.deadline, undefined]);
    expect(list.sandboxes[1]).toMatchObject({ hibernated: true, tenant: 'team-a' });
    expect(list.sandboxes[2]).not.toHaveProperty('unknown_later');
  });

  it('keep the older row schema for code that needs claimed_at', () => {
    expect(sandboxdRowSchema.safeParse(ROW).success).toBe(true);
    expect(sandboxRowSchema.safeParse(ROW).success).toBe(false);
    expect(sandboxRowSchema.safeParse({ ...ROW, claimed_at: GRANT.deadline }).success).toBe(true);
  });
});

describe('node info', () => {
  it('parse hibernated, archived and peers, and anything else a daemon adds', () => {
    const info = nodeInfoSchema.parse({
      pools: [{ key: ROW.key, warm: 4, refilling: 0, target: 4, golden: true }],
      claimed: 2,
      hibernated: 1,
      archived: 0,
      peers: ['10.0.0.6:7777'],
      templates: [],
    });
    expect(info).toMatchObject({ claimed: 2, hibernated: 1, archived: 0, peers: ['10.0.0.6:7777'] });
  });
});

describe('PUT /v1/pools bodies', () => {
  const pool = { template: 'base', warm: 4 };

  it('accept warm_max and the hibernate and archive durations', () => {
    const entry = {
      ...pool,
      warm_max: 16,
      idle_hibernate_seconds: 60,
      archive_after_seconds: 600,
      archive_delete_after_seconds: 86400,
    };
    expect(strictSetPoolsRequestSchema.parse({ pools: [entry] }).pools[0]).toEqual({
      ...entry,
      net: 'none',
      size: 'small',
    });
  });

  it('read warm_max 0 as no ceiling, as the daemon does', () => {
    expect(poolTargetSchema.safeParse({ ...pool, warm_max: 0 }).success).toBe(true);
    expect(messages(poolTargetSchema.safeParse({ ...pool, warm_max: 2 }))).toMatch(/warm_max must not be below warm/);
  });

  it.each([
    [{ ...pool, warm: -1 }, /warm must not be negative/],
    [{ ...pool, net: 'egress', idle_hibernate_seconds: 60 }, /not supported for egress pools/],
    [{ ...pool, archive_after_seconds: 60 }, /requires idle_hibernate_seconds > 0/],
    [{ ...pool, idle_hibernate_seconds: 60, archive_after_seconds: 60 }, /and a larger value/],
    [{ ...pool, archive_delete_after_seconds: -1 }, /archive seconds must not be negative/],
    [{ ...pool, net: 'gpu' }, /unknown net shape/],
    [{ ...pool, size: '4xlarge' }, /unknown size/],
  ])('refuse %j', (entry, why) => {
    expect(messages(setPoolsRequestSchema.safeParse({ pools: [entry] }))).toMatch(why);
  });

  it('refuse an unknown field anywhere in the strict form, and drop it in the forwarded form', () => {
    expect(strictSetPoolsRequestSchema.safeParse({ pools: [{ ...pool, warmm: 3 }] }).success).toBe(false);
    expect(strictSetPoolsRequestSchema.safeParse({ pools: [pool], generation: 3 }).success).toBe(false);
    expect(setPoolsRequestSchema.parse({ pools: [{ ...pool, warmm: 3 }] }).pools[0]).not.toHaveProperty('warmm');
  });

  it('refuse a key twice in either form', () => {
    expect(strictSetPoolsRequestSchema.safeParse({ pools: [pool, { ...pool, warm: 1 }] }).success).toBe(false);
    expect(setPoolsRequestSchema.safeParse({ pools: [pool, { ...pool, net: 'none' }] }).success).toBe(false);
  });
});
