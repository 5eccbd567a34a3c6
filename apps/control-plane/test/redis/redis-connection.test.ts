// The one way the control plane's Redis clients connect: the ioredis options
// built from the settings (password and CA from files, TLS, Sentinel), and
// real redis-servers that demand a password or speak only TLS.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCertificate, respCommand, startRedis, type TestRedis } from '@warmpool/harness';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bullConnection,
  connect as connectRedis,
  describeRedis,
  parseRedisUrl,
  readSecretFile,
  redisOptions,
  type RedisSettings,
} from '../../src/redis/connection.js';

const PASSWORD = 'correct horse battery staple';

/** Connects a client that is to be refused, and gives every error it saw, joined. */
async function connectionErrors(client: Redis): Promise<string> {
  const errors: string[] = [];
  client.on('error', (err: Error) => errors.push(err.message));
  await client.connect().catch((err: unknown) => errors.push(err instanceof Error ? err.message : String(err)));
  // A refused login surfaces on the first command when the connection itself came up.
  await client.ping().catch((err: unknown) => errors.push(err instanceof Error ? err.message : String(err)));
  return errors.join('\n');
}

describe('the Redis connection settings', () => {
  let dir: string;
  let passwordFile: string;
  let caFile: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'warmpool-redis-settings-'));
    passwordFile = join(dir, 'password');
    // As a Secret written by `echo` or kubectl --from-file: one trailing newline, not part of the password.
    writeFileSync(passwordFile, `${PASSWORD}\n`);
    caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, 'CA PEM');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('dials the URL: host, port, db, user and password from it', () => {
    expect(redisOptions({ url: 'redis://cache.example:6380/3' })).toMatchObject({
      host: 'cache.example',
      port: 6380,
      db: 3,
    });
    const options = redisOptions({ url: 'redis://warm%40pool:p%3Aw@[::1]' });
    expect(options).toMatchObject({ host: '::1', port: 6379, db: 0, username: 'warm@pool', password: 'p:w' });
    expect(options.tls).toBeUndefined();
  });

  it('reads the password from its file, without the trailing newline, and takes the user from the URL or the settings', () => {
    expect(redisOptions({ url: 'redis://warmpool@r', passwordFile })).toMatchObject({
      username: 'warmpool',
      password: PASSWORD,
    });
    expect(redisOptions({ url: 'redis://r', passwordFile, username: 'acl-user' })).toMatchObject({
      username: 'acl-user',
      password: PASSWORD,
    });
    expect(() => redisOptions({ url: 'redis://:pw@r', passwordFile })).toThrow(/given twice/);
  });

  it('speaks TLS for rediss://, trusting the CA file when given, else the system CAs', () => {
    expect(redisOptions({ url: 'rediss://r:6380' }).tls).toEqual({});
    expect(redisOptions({ url: 'rediss://r:6380', caFile }).tls).toEqual({ ca: Buffer.from('CA PEM') });
    expect(() => redisOptions({ url: 'redis://r', caFile })).toThrow(/needs a rediss:\/\/ URL/);
  });

  it("asks the Sentinels for the primary by name, with their own password, and never dials the URL's host", () => {
    const spw = join(dir, 'sentinel-password');
    writeFileSync(spw, 'sentinel-secret\n');
    const settings: RedisSettings = {
      url: 'redis://primary.invalid/2',
      passwordFile,
      sentinel: {
        hosts: [
          { host: 's-0', port: 26379 },
          { host: 's-1', port: 26380 },
        ],
        masterName: 'warmpool',
        passwordFile: spw,
      },
    };
    const options = redisOptions(settings);
    expect(options).toMatchObject({
      sentinels: [
        { host: 's-0', port: 26379 },
        { host: 's-1', port: 26380 },
      ],
      name: 'warmpool',
      role: 'master',
      password: PASSWORD,
      sentinelPassword: 'sentinel-secret',
      failoverDetector: true,
      db: 2,
    });
    expect(options.host).toBeUndefined();
    expect(options.tls).toBeUndefined();
    // rediss:// means TLS to the Sentinels and to the primary they name.
    expect(redisOptions({ ...settings, url: 'rediss://primary.invalid', caFile })).toMatchObject({
      tls: { ca: Buffer.from('CA PEM') },
      sentinelTLS: { ca: Buffer.from('CA PEM') },
      enableTLSForSentinelMode: true,
    });
    expect(() => redisOptions({ ...settings, sentinel: { hosts: [], masterName: 'warmpool' } })).toThrow(
      /at least one Sentinel/,
    );
    expect(() => redisOptions({ ...settings, sentinel: { hosts: [{ host: 's', port: 1 }], masterName: '' } })).toThrow(
      /primary's name/,
    );
  });

  it("applies each client's own behaviour last, and gives BullMQ the same options", () => {
    const retryStrategy = (): number => 10;
    const options = redisOptions({ url: 'redis://r' }, { lazyConnect: true, enableOfflineQueue: false, retryStrategy });
    expect(options).toMatchObject({ host: 'r', lazyConnect: true, enableOfflineQueue: false, retryStrategy });
    const bull = bullConnection({ url: 'redis://r/1', passwordFile }, { maxRetriesPerRequest: null });
    expect(bull).toMatchObject({ host: 'r', db: 1, password: PASSWORD, maxRetriesPerRequest: null });
  });

  it('reconnects when a demoted primary answers READONLY, and on nothing else', () => {
    const reconnect = redisOptions({ url: 'redis://r' }).reconnectOnError;
    if (typeof reconnect !== 'function') throw new Error('no reconnectOnError');
    expect(reconnect(new Error("READONLY You can't write against a read only replica."))).toBe(true);
    expect(reconnect(new Error('NOAUTH Authentication required.'))).toBe(false);
  });

  it('refuses URLs it would misread: other schemes, query parameters, a path that is no db, no host', () => {
    expect(() => parseRedisUrl('http://r')).toThrow(/scheme http:/);
    expect(() => parseRedisUrl('redis://r?db=2')).toThrow(/query parameters/);
    expect(() => parseRedisUrl('redis://r/cache')).toThrow(/not a database number/);
    expect(() => parseRedisUrl('redis://')).toThrow(/names no host/);
    expect(() => parseRedisUrl('not a url at all')).toThrow(/is not a URL/);
  });

  it('names a secret file it cannot use, never its content', () => {
    expect(() => readSecretFile(join(dir, 'missing'))).toThrow(
      /cannot read the Redis secret file .*missing \(ENOENT\)/,
    );
    const empty = join(dir, 'empty');
    writeFileSync(empty, '\n');
    expect(() => readSecretFile(empty)).toThrow(/is empty/);
  });

  it('describes where it connects for logs, with no password in it', () => {
    expect(describeRedis({ url: 'redis://user:hunter2@r:6379/1' })).toBe('redis://user:***@r:6379/1');
    const sentinel = describeRedis({
      url: 'rediss://primary.invalid',
      passwordFile,
      caFile,
      sentinel: { hosts: [{ host: '::1', port: 26379 }], masterName: 'warmpool', passwordFile },
    });
    expect(sentinel).toBe(
      'rediss://primary.invalid (Sentinel primary warmpool via [::1]:26379; password from file; CA from file; Sentinel password from file)',
    );
    expect(sentinel).not.toContain(PASSWORD);
    expect(describeRedis({ url: 'redis://:pw@' })).not.toContain('pw');
  });
});

describe('a Redis that demands a password (requirepass, real redis-server)', () => {
  let server: TestRedis;
  let dir: string;
  let passwordFile: string;
  const clients: Redis[] = [];
  const client = (settings: RedisSettings): Redis => {
    const made = connectRedis(settings, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    made.on('error', () => undefined);
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    server = await startRedis({ password: PASSWORD });
    dir = mkdtempSync(join(tmpdir(), 'warmpool-redis-auth-'));
    passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, `${PASSWORD}\n`);
  });
  afterAll(async () => {
    for (const made of clients) made.disconnect();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets a client with the password file in, and refuses one without it', async () => {
    const withPassword = client({ url: server.url, passwordFile });
    await withPassword.connect();
    expect(await withPassword.set('k', 'v')).toBe('OK');
    expect(await withPassword.get('k')).toBe('v');

    const without = client({ url: server.url });
    await expect(connectionErrors(without)).resolves.toMatch(/NOAUTH/);
  });

  it('logs in as an ACL user named in the URL, with its password from the file', async () => {
    const admin = client({ url: server.url, passwordFile });
    await admin.connect();
    await admin.call('ACL', 'SETUSER', 'warmpool', 'on', `>${PASSWORD}`, '~*', '+@all');
    const user = client({ url: `redis://warmpool@${server.host}:${server.port}`, passwordFile });
    await user.connect();
    expect(await user.call('ACL', 'WHOAMI')).toBe('warmpool');
  });

  it('runs a BullMQ Queue and Worker on the same settings', async () => {
    const settings: RedisSettings = { url: server.url, passwordFile };
    const queue = new Queue('auth-spec', { connection: bullConnection(settings) });
    const done = new Promise<unknown>((resolve) => {
      const worker = new Worker('auth-spec', async (job) => job.data as unknown, {
        connection: bullConnection(settings, { maxRetriesPerRequest: null }),
      });
      worker.on('completed', (job) => {
        resolve(job.returnvalue);
        void worker.close();
      });
    });
    try {
      await queue.add('job', { claims: 3 });
      expect(await done).toEqual({ claims: 3 });
    } finally {
      await queue.close();
    }
  });
});

describe('a Redis that speaks only TLS (rediss://, real redis-server)', () => {
  let server: TestRedis;
  let dir: string;
  let caFile: string;
  const clients: Redis[] = [];

  beforeAll(async () => {
    const ca = issueCertificate({ subject: { commonName: 'warmpool-redis-test-ca' }, isCa: true });
    const serving = issueCertificate({
      subject: { commonName: 'redis' },
      issuer: ca,
      usages: ['server'],
      ipAddresses: ['127.0.0.1'],
    });
    dir = mkdtempSync(join(tmpdir(), 'warmpool-redis-tls-'));
    caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, ca.certPem);
    server = await startRedis({ tls: { certPem: serving.certPem, keyPem: serving.keyPem, caPem: ca.certPem } });
  });
  afterAll(async () => {
    for (const made of clients) made.disconnect();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('connects over TLS, trusting the CA file', async () => {
    expect(server.url).toMatch(/^rediss:\/\//);
    const client = connectRedis({ url: server.url, caFile }, { lazyConnect: true });
    clients.push(client);
    await client.connect();
    expect(await client.ping()).toBe('PONG');
  });

  it("refuses a server whose certificate the system's CAs do not vouch for", async () => {
    const client = connectRedis(
      { url: server.url },
      { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null },
    );
    clients.push(client);
    await expect(connectionErrors(client)).resolves.toMatch(/self-signed|certificate/i);
  });

  it('is not reachable in plaintext', async () => {
    await expect(respCommand({ host: server.host, port: server.port }, ['PING'], 500)).rejects.toThrow();
  });
});
