// One way to reach Redis for every client of the control plane: the claim
// pipeline's commands and reply listener, BullMQ's Queue and Worker, the
// Sandbox API's claim feed and the federation hub. Each client adds only
// its own behaviour (offline queue, retries, auto-pipelining, how long it
// blocks) as overrides; where Redis is, how to log in, how to trust it and
// how long to wait for it (dead-peer.ts) is decided here, once.
//
// Secrets are never in the settings: they are read from files (a mounted
// Secret) each time a client's options are built, and never logged
// (describeRedis is what a log line may carry).
import { readFileSync } from 'node:fs';
import { formatHostPort, type HostPort } from '@warmpool/runtime';
import type { ConnectionOptions as BullConnectionOptions } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { blockingFor, deadPeerOptions, DEFAULT_REDIS_TIMEOUT_MS } from './dead-peer.js';
import './fast-string-prototype.js';

export const REDIS_PROTOCOLS: readonly string[] = ['redis:', 'rediss:'];

export interface SentinelSettings {
  /** The Sentinels to ask where the primary is (any one that answers will do). */
  hosts: readonly HostPort[];
  /** The primary's name in the Sentinels' configuration (`sentinel monitor <name> …`). */
  masterName: string;
  /** File holding the Sentinels' own password (their `requirepass`), when they have one. */
  passwordFile?: string;
}

export interface RedisSettings {
  /**
   * `redis://[user[:password]@]host[:port][/db]`, or `rediss://` for TLS. With
   * `sentinel`, its host and port are not dialed (the Sentinels name the
   * primary): only its scheme, user, password and db count.
   */
  url: string;
  /** File holding the password (Redis's `requirepass` or the ACL user's); not together with one in the URL. */
  passwordFile?: string;
  /** The ACL user, when the URL names none. */
  username?: string;
  /** PEM file of the CA that signed Redis's certificate (rediss:// only); default: the system's CAs. */
  caFile?: string;
  /** Find the primary through Redis Sentinel. */
  sentinel?: SentinelSettings;
  /**
   * How long a command waits for Redis's answer before it fails and its connection is made anew (dead-peer.ts);
   * a blocking command waits its block on top. Default DEFAULT_REDIS_TIMEOUT_MS.
   */
  timeoutMs?: number;
}

/** How a file's secret is read; a test may read from elsewhere. */
export type ReadSecret = (file: string) => string;

/**
 * The ioredis options for these settings, `overrides` (a client's own
 * behaviour: retries, offline queue, lazyConnect, blockingOptions, …) applied
 * last. Without overrides a connection's commands must not block: each waits
 * at most the settings' timeout.
 * Throws when the URL is unusable or a secret file cannot be read; the
 * message names the file, never its content.
 */
export function redisOptions(
  settings: RedisSettings,
  overrides: RedisOptions = {},
  readSecret: ReadSecret = readSecretFile,
): RedisOptions {
  const url = parseRedisUrl(settings.url);
  if (url.password !== undefined && settings.passwordFile !== undefined)
    throw new Error('the Redis password is given twice: in the URL and in a password file; keep one');
  const password = settings.passwordFile !== undefined ? readSecret(settings.passwordFile) : url.password;
  const username = url.username ?? settings.username;
  if (settings.caFile !== undefined && !url.tls)
    throw new Error('a CA file for Redis needs a rediss:// URL (TLS); this one is redis://');
  const tls = url.tls ? { ...(settings.caFile !== undefined ? { ca: readCaFile(settings.caFile) } : {}) } : undefined;
  const base: RedisOptions = {
    ...deadPeerOptions(redisTimeoutMs(settings)),
    db: url.db,
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    // A primary demoted under us (a failover that kept our connection up) answers writes READONLY:
    // reconnect, so the next command reaches whoever is primary now. The failed command is not resent.
    reconnectOnError: (err: Error) => err.message.startsWith('READONLY'),
  };
  const sentinel = settings.sentinel;
  if (sentinel === undefined) {
    return { ...base, host: url.host, port: url.port, ...(tls !== undefined ? { tls } : {}), ...overrides };
  }
  if (sentinel.hosts.length === 0) throw new Error('Redis Sentinel needs at least one Sentinel address');
  if (sentinel.masterName === '') throw new Error("Redis Sentinel needs the primary's name");
  const sentinelPassword = sentinel.passwordFile !== undefined ? readSecret(sentinel.passwordFile) : undefined;
  return {
    ...base,
    sentinels: sentinel.hosts.map(({ host, port }) => ({ host, port })),
    name: sentinel.masterName,
    role: 'master',
    ...(sentinelPassword !== undefined ? { sentinelPassword } : {}),
    // Told by the Sentinels (+switch-master) rather than waiting for the old primary's connection to fail.
    failoverDetector: true,
    // rediss:// means TLS everywhere: to the Sentinels and to the primary they name, with the same CA.
    ...(tls !== undefined ? { tls, sentinelTLS: tls, enableTLSForSentinelMode: true } : {}),
    ...overrides,
  };
}

/** How long a command of these settings waits for Redis (a blocking one: on top of its block). */
export function redisTimeoutMs(settings: RedisSettings): number {
  return settings.timeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS;
}

/**
 * The overrides of a connection whose blocking commands block up to `maxBlockMs`: its commands and socket wait that
 * plus the settings' timeout, so a block is never cut and a dead Redis is still noticed.
 */
export function blockingOptions(settings: RedisSettings, maxBlockMs: number): RedisOptions {
  return blockingFor(redisTimeoutMs(settings), maxBlockMs);
}

/** A client for these settings (see redisOptions). */
export function connect(settings: RedisSettings, overrides: RedisOptions = {}): Redis {
  return new Redis(redisOptions(settings, overrides));
}

/**
 * BullMQ's `connection` option for a Queue or Worker: the same ioredis
 * options (BullMQ makes its clients from them). A Worker needs
 * `maxRetriesPerRequest: null` among the overrides.
 */
export function bullConnection(settings: RedisSettings, overrides: RedisOptions = {}): BullConnectionOptions {
  // BullMQ passes these to ioredis as they are; only its type spells optional fields without `| undefined`.
  return redisOptions(settings, overrides) as BullConnectionOptions;
}

/** Where these settings connect, for logs: never a password. */
export function describeRedis(settings: RedisSettings): string {
  const url = redactedUrl(settings.url);
  const notes = [
    ...(settings.passwordFile !== undefined ? ['password from file'] : []),
    ...(settings.caFile !== undefined ? ['CA from file'] : []),
  ];
  const sentinel = settings.sentinel;
  if (sentinel !== undefined) {
    notes.unshift(`Sentinel primary ${sentinel.masterName} via ${sentinel.hosts.map(formatHostPort).join(',')}`);
    if (sentinel.passwordFile !== undefined) notes.push('Sentinel password from file');
  }
  return notes.length === 0 ? url : `${url} (${notes.join('; ')})`;
}

interface ParsedRedisUrl {
  tls: boolean;
  host: string;
  port: number;
  db: number;
  username: string | undefined;
  password: string | undefined;
}

const DEFAULT_PORT = 6379;

/** A redis:// or rediss:// URL's parts. Query parameters are refused: no option is read from them. */
export function parseRedisUrl(text: string): ParsedRedisUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`the Redis URL ${redactedUrl(text)} is not a URL`);
  }
  if (!REDIS_PROTOCOLS.includes(url.protocol))
    throw new Error(`the Redis URL's scheme ${url.protocol} is not redis: or rediss:`);
  if (url.search !== '')
    throw new Error(`the Redis URL ${redactedUrl(text)} has query parameters, which are not read; use the flags`);
  const path = url.pathname.replace(/^\//, '');
  if (!/^\d*$/.test(path)) throw new Error(`the Redis URL's path /${path} is not a database number`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new Error('the Redis URL names no host');
  return {
    tls: url.protocol === 'rediss:',
    host,
    port: url.port === '' ? DEFAULT_PORT : Number(url.port),
    db: path === '' ? 0 : Number(path),
    username: url.username === '' ? undefined : decodeURIComponent(url.username),
    password: url.password === '' ? undefined : decodeURIComponent(url.password),
  };
}

/** The URL with its password (if any) replaced by ***; an unparsable one is not echoed at all. */
export function redactedUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** A secret file's content without its trailing newline (`echo pw > file`, kubectl create secret --from-file). */
export function readSecretFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new Error(`cannot read the Redis secret file ${file} (${code})`, { cause: err });
  }
  const secret = text.replace(/\r?\n$/, '');
  if (secret === '') throw new Error(`the Redis secret file ${file} is empty`);
  return secret;
}

function readCaFile(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new Error(`cannot read the Redis CA file ${file} (${code})`, { cause: err });
  }
}
