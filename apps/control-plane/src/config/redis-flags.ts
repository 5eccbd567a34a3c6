// How the flags of one Redis (the claims' Redis, the federation hub) become
// its connection settings; every inconsistency is a ConfigError naming its flags.
import { ConfigError, hostPortFlag, messageOf, positiveDurations } from '@warmpool/runtime';
import { parseRedisUrl, type RedisSettings } from '../redis/connection.js';

type FileFlag = readonly [flag: string, file: string | undefined];

/** The flags that say how one Redis is reached (the claims' Redis has them all, the federation hub a few). */
export interface RedisFlags {
  url: readonly [flag: string, url: string | undefined];
  passwordFile: FileFlag;
  caFile: FileFlag;
  /** How long a command waits for this Redis (redis/dead-peer.ts). */
  timeout: readonly [flag: string, ms: number];
  sentinels?: readonly [flag: string, list: string | undefined];
  sentinelMaster?: readonly [flag: string, name: string | undefined];
  sentinelPasswordFile?: FileFlag;
}

export function noRedisFlagsWithoutUrl(flags: RedisFlags): void {
  const given = [flags.passwordFile, flags.caFile, flags.sentinels, flags.sentinelMaster, flags.sentinelPasswordFile]
    .filter((flag) => flag !== undefined && flag[1] !== undefined && flag[1] !== '')
    .map((flag) => flag?.[0]);
  if (given.length > 0)
    throw new ConfigError(`${given.join(' / ')} ${given.length === 1 ? 'needs' : 'need'} ${flags.url[0]}`);
}

/** The connection settings these flags describe; every inconsistency is a ConfigError naming its flags. */
export function redisSettingsOf(flags: RedisFlags, url: string): RedisSettings {
  const urlFlagName = flags.url[0];
  let parsed: ReturnType<typeof parseRedisUrl>;
  try {
    parsed = parseRedisUrl(url);
  } catch (err) {
    throw new ConfigError(`${urlFlagName}: ${messageOf(err)}`);
  }
  const [passwordFlag, passwordFile] = flags.passwordFile;
  if (passwordFile !== undefined && parsed.password !== undefined)
    throw new ConfigError(`${urlFlagName} has a password and ${passwordFlag} gives one too: keep one`);
  const [caFlag, caFile] = flags.caFile;
  if (caFile !== undefined && !parsed.tls)
    throw new ConfigError(`${caFlag} needs a rediss:// ${urlFlagName} (TLS); this one is redis://`);
  positiveDurations([flags.timeout]);
  const settings: RedisSettings = {
    url,
    timeoutMs: flags.timeout[1],
    ...(passwordFile !== undefined ? { passwordFile } : {}),
    ...(caFile !== undefined ? { caFile } : {}),
  };
  const [sentinelsFlag = '', sentinelList = ''] = flags.sentinels ?? [];
  const [masterFlag = '', masterName = ''] = flags.sentinelMaster ?? [];
  const [sentinelPasswordFlag = '', sentinelPasswordFile] = flags.sentinelPasswordFile ?? [];
  if (sentinelList === '') {
    if (masterName !== '') throw new ConfigError(`${masterFlag} needs ${sentinelsFlag} (where the Sentinels are)`);
    if (sentinelPasswordFile !== undefined) throw new ConfigError(`${sentinelPasswordFlag} needs ${sentinelsFlag}`);
    return settings;
  }
  if (masterName === '')
    throw new ConfigError(`${sentinelsFlag} needs ${masterFlag} (the primary's name in the Sentinels' configuration)`);
  const hosts = sentinelList
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      if (entry.startsWith(':')) throw new ConfigError(`${sentinelsFlag}: "${entry}" names no host (want HOST:PORT)`);
      return hostPortFlag(sentinelsFlag, entry);
    });
  if (hosts.length === 0) throw new ConfigError(`${sentinelsFlag} lists no Sentinel (want HOST:PORT,…)`);
  return {
    ...settings,
    sentinel: {
      hosts,
      masterName,
      ...(sentinelPasswordFile !== undefined ? { passwordFile: sentinelPasswordFile } : {}),
    },
  };
}
