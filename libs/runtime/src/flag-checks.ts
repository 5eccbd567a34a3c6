// The checks a process runs on its flags before anything starts, written once
// for every app's validateConfig: each throws a ConfigError that names the flag.
import { parseHostPort, type HostPort } from './address.js';
import { ConfigError } from './config.js';
import { formatDuration } from './duration.js';
import { messageOf } from './errors.js';

/** A HOST:PORT flag's value. */
export function hostPortFlag(flag: string, value: string): HostPort {
  try {
    return parseHostPort(value);
  } catch (err) {
    throw new ConfigError(`${flag}: ${messageOf(err)}`);
  }
}

/** A URL flag's value, whose scheme is one of `protocols` (e.g. `['redis:', 'rediss:']`). */
export function urlFlag(flag: string, value: string, protocols: readonly string[]): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch (err) {
    throw new ConfigError(`${flag}: ${messageOf(err)}`);
  }
  if (!protocols.includes(url.protocol))
    throw new ConfigError(`${flag}: scheme ${url.protocol} is not ${protocols.join(' or ')}`);
  return url;
}

/** Durations (ms) that must be above zero. */
export function positiveDurations(flags: ReadonlyArray<readonly [flag: string, ms: number]>): void {
  for (const [flag, ms] of flags)
    if (!(ms > 0)) throw new ConfigError(`${flag} must be positive (got ${formatDuration(ms)})`);
}

/** Counts that must be whole numbers of at least 1. */
export function countsOfAtLeastOne(flags: ReadonlyArray<readonly [flag: string, n: number]>): void {
  for (const [flag, n] of flags)
    if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${flag} must be a whole number of at least 1 (got ${n})`);
}

/** Two file flags that make sense only together (a TLS certificate and its key): both, or neither. */
export function pairedFiles(
  cert: readonly [flag: string, file: string | undefined],
  key: readonly [flag: string, file: string | undefined],
): { certFile: string; keyFile: string } | undefined {
  if ((cert[1] === undefined) !== (key[1] === undefined)) throw new ConfigError(`${cert[0]} and ${key[0]} go together`);
  return cert[1] !== undefined && key[1] !== undefined ? { certFile: cert[1], keyFile: key[1] } : undefined;
}
