import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, parseConfig } from '@warmpool/runtime';
import { describe, expect, it } from 'vitest';
import { FLAGS } from '../../src/config/flags.js';
import { validateConfig } from '../../src/config/validate.js';

const noNamespaceFile = (): undefined => undefined;

describe('control plane flags', () => {
  it('has the documented defaults', () => {
    const { config } = parseConfig(FLAGS, [], {});
    expect(config).toMatchObject({
      metricsBindAddress: '0.0.0.0:8080',
      healthProbeBindAddress: undefined,
      stallTimeout: 120_000,
      interval: 5_000,
      staleAfter: 90_000,
      setPoolsTimeout: 2_000,
      setPoolsConcurrency: 256,
      leaderElect: true,
      leaderElectLeaseDuration: 15_000,
      leaderElectRenewDeadline: 10_000,
      leaderElectRetryPeriod: 2_000,
      leaderElectResourceName: 'warmpool-control-plane',
      logLevel: 'info',
    });
    const settings = validateConfig(config, noNamespaceFile);
    expect(settings).toMatchObject({
      listen: { host: '0.0.0.0', port: 8080 },
      namespace: 'default',
      leaderElection: true,
      leaseName: 'warmpool-control-plane',
      leaseDurationMs: 15_000,
      driver: { intervalMs: 5_000, staleAfterMs: 90_000, agentCallConcurrency: 256 },
      stallTimeoutMs: 120_000,
      federation: { intervalMs: 2_000 },
    });
    expect(settings.probeListen).toBeUndefined();
    expect(settings.claims).toBeUndefined();
    expect(settings.sandboxApi).toBeUndefined();
    expect(settings.federation.hub).toBeUndefined();
  });

  it('accepts every flag the Helm chart passes', () => {
    const chart = readFileSync(
      fileURLToPath(new URL('../../../../charts/warmpool/templates/control-plane.yaml', import.meta.url)),
      'utf8',
    );
    const flags = [...chart.matchAll(/- --([a-z-]+)=/g)].map((m) => m[1] as string);
    expect(flags.length).toBeGreaterThan(10);
    const argv = flags.map(
      (flag) =>
        `--${flag}=${/concurrency|items$/.test(flag) ? '8' : flag === 'leader-elect' ? 'true' : /timeout|interval|after|duration|deadline|period|grace|idle$|rejoin$|batch-max$|delay$|lease$|ttl$/.test(flag) ? '1s' : 'x'}`,
    );
    expect(() => parseConfig(FLAGS, argv, {})).not.toThrow();
  });

  it('turns provisioning on with --redis-url, serving the claim API on --claims-listen', () => {
    const parse = (...argv: string[]) => validateConfig(parseConfig(FLAGS, argv, {}).config, noNamespaceFile);
    expect(parse().claims).toBeUndefined();
    const plain = parse('--redis-url=redis://127.0.0.1:6379').claims;
    expect(plain).toMatchObject({
      redis: { url: 'redis://127.0.0.1:6379' },
      listen: { host: '0.0.0.0', port: 8081 },
      settings: { claimTimeoutMs: 10_000, maxAttempts: 3 },
    });
    expect(plain?.tls).toBeUndefined();
    expect(
      parse(
        '--redis-url=rediss://r:6380',
        '--claims-listen=127.0.0.1:9443',
        '--claims-tls-cert-file=c.pem',
        '--claims-tls-key-file=k.pem',
      ).claims,
    ).toMatchObject({
      redis: { url: 'rediss://r:6380' },
      listen: { host: '127.0.0.1', port: 9443 },
      tls: { certFile: 'c.pem', keyFile: 'k.pem' },
    });
    expect(() => parse('--redis-url=http://r')).toThrow(/--redis-url/);
    expect(() => parse('--redis-url=redis://r', '--claims-tls-cert-file=c.pem')).toThrow(/go together/);
    expect(() => parse('--claims-tls-cert-file=c.pem', '--claims-tls-key-file=k.pem')).toThrow(/need --redis-url/);
    expect(() => parse('--redis-url=redis://r', '--claims-listen=nope')).toThrow(/--claims-listen/);
    expect(() => parse('--redis-url=redis://r', '--claim-batch-max-items=0')).toThrow(/--claim-batch-max-items/);
  });

  it('reaches Redis with a password file, a CA for rediss://, or through Sentinel, and refuses what would not work', () => {
    const parse = (...argv: string[]) => validateConfig(parseConfig(FLAGS, argv, {}).config, noNamespaceFile);
    expect(
      parse('--redis-url=rediss://warmpool@r:6380/2', '--redis-password-file=/pw', '--redis-ca-file=/ca.crt').claims
        ?.redis,
    ).toEqual({ url: 'rediss://warmpool@r:6380/2', passwordFile: '/pw', caFile: '/ca.crt', timeoutMs: 10_000 });
    expect(
      parse(
        '--redis-url=redis://ignored',
        '--redis-sentinels=s-0.s:26379, s-1.s:26379,[::1]:26380',
        '--redis-sentinel-master=warmpool',
        '--redis-sentinel-password-file=/spw',
      ).claims?.redis,
    ).toEqual({
      url: 'redis://ignored',
      timeoutMs: 10_000,
      sentinel: {
        hosts: [
          { host: 's-0.s', port: 26379 },
          { host: 's-1.s', port: 26379 },
          { host: '::1', port: 26380 },
        ],
        masterName: 'warmpool',
        passwordFile: '/spw',
      },
    });
    expect(() => parse('--redis-url=redis://r', '--redis-sentinels=s:26379')).toThrow(
      '--redis-sentinels needs --redis-sentinel-master',
    );
    expect(() => parse('--redis-url=redis://r', '--redis-sentinel-master=m')).toThrow(
      '--redis-sentinel-master needs --redis-sentinels',
    );
    expect(() => parse('--redis-url=redis://r', '--redis-sentinel-password-file=/spw')).toThrow(
      '--redis-sentinel-password-file needs --redis-sentinels',
    );
    expect(() => parse('--redis-url=redis://r', '--redis-sentinels=s', '--redis-sentinel-master=m')).toThrow(
      /--redis-sentinels: invalid address "s"/,
    );
    expect(() => parse('--redis-url=redis://r', '--redis-sentinels=:26379', '--redis-sentinel-master=m')).toThrow(
      /names no host/,
    );
    expect(() => parse('--redis-url=redis://r', '--redis-sentinels=,', '--redis-sentinel-master=m')).toThrow(
      /lists no Sentinel/,
    );
    expect(() => parse('--redis-url=redis://:pw@r', '--redis-password-file=/pw')).toThrow(
      '--redis-url has a password and --redis-password-file gives one too',
    );
    expect(() => parse('--redis-url=redis://r', '--redis-ca-file=/ca.crt')).toThrow(
      '--redis-ca-file needs a rediss:// --redis-url',
    );
    expect(() => parse('--redis-url=redis://r?db=2')).toThrow(/--redis-url: .*query parameters/);
    expect(() => parse('--redis-url=redis://r/x')).toThrow(/--redis-url: .*not a database number/);
    expect(() => parse('--redis-password-file=/pw', '--redis-sentinel-master=m')).toThrow(
      '--redis-password-file / --redis-sentinel-master need --redis-url',
    );
    // The federation hub: its own password and CA files.
    expect(
      parse(
        '--cluster-id=east',
        '--federation-redis-url=rediss://hub:6380',
        '--federation-redis-password-file=/hub-pw',
        '--federation-redis-ca-file=/hub-ca.crt',
      ).federation.hub?.redis,
    ).toEqual({ url: 'rediss://hub:6380', passwordFile: '/hub-pw', caFile: '/hub-ca.crt', timeoutMs: 10_000 });
    // How long a command waits for each Redis: its own flag, positive.
    expect(parse('--redis-url=redis://r', '--redis-timeout=3s').claims?.redis.timeoutMs).toBe(3_000);
    expect(
      parse('--cluster-id=east', '--federation-redis-url=redis://hub', '--federation-redis-timeout=30s').federation.hub
        ?.redis.timeoutMs,
    ).toBe(30_000);
    expect(() => parse('--redis-url=redis://r', '--redis-timeout=0s')).toThrow('--redis-timeout must be positive');
    expect(() =>
      parse('--cluster-id=east', '--federation-redis-url=redis://hub', '--federation-redis-timeout=0s'),
    ).toThrow('--federation-redis-timeout must be positive');
    expect(() => parse('--federation-redis-password-file=/hub-pw')).toThrow(
      '--federation-redis-password-file needs --federation-redis-url',
    );
    expect(() => parse('--federation-redis-url=redis://hub', '--federation-redis-ca-file=/ca')).toThrow(
      '--federation-redis-ca-file needs a rediss:// --federation-redis-url',
    );
  });

  it("reads the pod's namespace and name from the downward API env", () => {
    const { config } = parseConfig(FLAGS, [], { POD_NAMESPACE: 'warmpool', POD_NAME: 'cp-7f9' });
    expect(config.identity).toBe('cp-7f9');
    expect(validateConfig(config, noNamespaceFile).namespace).toBe('warmpool');
  });

  it('takes Kubernetes-style flag names, the old names as aliases, and WARMPOOL_ variables', () => {
    const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(FLAGS, argv, env).config;
    expect(
      parse(['--leader-elect-lease-duration=20s', '--renew-deadline=9s', '--leader-elect-resource-name=x']),
    ).toMatchObject({
      leaderElectLeaseDuration: 20_000,
      leaderElectRenewDeadline: 9_000,
      leaderElectResourceName: 'x',
    });
    expect(parse(['--leader-elect=false']).leaderElect).toBe(false);
    expect(parse(['--listen=127.0.0.1:9000']).metricsBindAddress).toBe('127.0.0.1:9000');
    expect(parse([], { WARMPOOL_RECONCILE_INTERVAL: '7s', RECONCILE_INTERVAL: '9s' }).interval).toBe(7_000);
    expect(parse([], { LEASE_DURATION: '30s' }).leaderElectLeaseDuration).toBe(30_000);
    const separate = validateConfig(
      parseConfig(FLAGS, ['--metrics-bind-address=127.0.0.1:9000', '--health-probe-bind-address=127.0.0.1:9001'], {})
        .config,
      noNamespaceFile,
    );
    expect(separate).toMatchObject({ listen: { port: 9000 }, probeListen: { port: 9001 } });
  });

  it('refuses lease timings client-go would refuse', () => {
    const parse = (...argv: string[]) => validateConfig(parseConfig(FLAGS, argv, {}).config, noNamespaceFile);
    expect(() => parse('--lease-duration=5s', '--renew-deadline=5s')).toThrow(ConfigError);
    expect(() => parse('--renew-deadline=2s', '--retry-period=2s', '--lease-duration=3s')).toThrow(/1.2/);
    expect(() => parse('--interval=0s')).toThrow(/--interval must be positive/);
    expect(() => parse('--set-pools-concurrency=0')).toThrow(/--set-pools-concurrency/);
    expect(() => parse('--listen=nope')).toThrow(/--metrics-bind-address/);
    expect(() => parse('--health-probe-bind-address=nope')).toThrow(/--health-probe-bind-address/);
    expect(() => parse('--stall-timeout=1s', '--interval=5s')).toThrow(/--stall-timeout/);
  });

  it('federates only with both --cluster-id and --federation-redis-url, and checks the federation timings and URLs', () => {
    const parse = (...argv: string[]) => validateConfig(parseConfig(FLAGS, argv, {}).config, noNamespaceFile);
    expect(parse().federation).toEqual({ intervalMs: 2_000 });
    expect(parse('--cluster-id=east').federation).toEqual({ clusterId: 'east', intervalMs: 2_000 });
    expect(parse('--federation-redis-url=redis://hub:6379').federation).toEqual({ intervalMs: 2_000 });
    expect(parse('--cluster-id=east', '--federation-redis-url=redis://hub:6379').federation).toEqual({
      clusterId: 'east',
      hub: { redis: { url: 'redis://hub:6379', timeoutMs: 10_000 }, prefix: 'warmpool:federation' },
      intervalMs: 2_000,
      ttlMs: 6_000,
    });
    expect(
      parse(
        '--cluster-id=east',
        '--federation-redis-url=redis://hub:6379',
        '--federation-interval=1s',
        '--federation-ttl=10s',
      ).federation,
    ).toMatchObject({ intervalMs: 1_000, ttlMs: 10_000 });
    expect(() => parse('--cluster-id=east', '--federation-redis-url=http://hub')).toThrow(/--federation-redis-url/);
    expect(() => parse('--federation-interval=2s', '--federation-ttl=2s')).toThrow(/--federation-ttl/);
    expect(() => parse('--federation-interval=0s')).toThrow(/--federation-interval/);
    expect(
      parse('--cluster-id=east', '--federation-redis-url=redis://hub:6379', '--federation-peers-file=/p.json')
        .federation.peersFile,
    ).toBe('/p.json');
    expect(() => parse('--federation-peers-file=/p.json')).toThrow(/--federation-peers-file needs --cluster-id/);
  });

  it('refuses to start with the removed shared-token flags, naming their replacement', () => {
    const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) =>
      validateConfig(parseConfig(FLAGS, argv, env).config, noNamespaceFile);
    const federated = ['--cluster-id=east', '--federation-redis-url=redis://hub:6379'];
    for (const [argv, env] of [
      [[...federated, '--federation-token-file=/t'], {}],
      [federated, { FEDERATION_TOKEN_FILE: '/t' }],
      [['--federation-token-file=/t'], {}],
      [[...federated, '--claims-advertise-url=https://claims.east.example'], {}],
    ] as const) {
      expect(() => parse([...argv], env)).toThrow(ConfigError);
      expect(() => parse([...argv], env)).toThrow(/was removed.*--federation-peers-file/);
    }
  });
});
