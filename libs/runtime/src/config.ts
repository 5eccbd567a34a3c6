// One declaration per setting gives the flag, its environment variable, its
// default and its --help line, so the three can never drift apart.
import { parseArgs } from 'node:util';
import { formatDuration, parseDuration } from './duration.js';
import { messageOf } from './errors.js';

export type FlagKind = 'string' | 'number' | 'boolean' | 'duration';
type ValueOf<K extends FlagKind> = K extends 'number' | 'duration' ? number : K extends 'boolean' ? boolean : string;

export interface FlagSpec<K extends FlagKind = FlagKind> {
  kind: K;
  description: string;
  /**
   * Environment variable read when the flag is absent, without the WARMPOOL_
   * prefix: `LOG_LEVEL` is read as WARMPOOL_LOG_LEVEL, then as LOG_LEVEL (the
   * unprefixed name stays an alias; the downward-API names POD_NAME & co. are
   * what the chart sets).
   */
  env?: string;
  /** Older environment variable names, read last. */
  envAliases?: string[];
  /** Older flag names (kebab-case, without dashes), still accepted. */
  aliases?: string[];
  default?: ValueOf<K>;
}

export const ENV_PREFIX = 'WARMPOOL_';

/** The environment variables a flag reads, in order of precedence. */
export function envNames(spec: FlagSpec): string[] {
  if (spec.env === undefined) return [];
  const primary = spec.env.startsWith(ENV_PREFIX) ? [spec.env] : [`${ENV_PREFIX}${spec.env}`, spec.env];
  return [...primary, ...(spec.envAliases ?? [])];
}

export type FlagsSpec = Record<string, FlagSpec>;

/** The parsed settings: flags with a default are always present. */
export type ConfigOf<S extends FlagsSpec> = {
  [K in keyof S]: S[K] extends { default: infer D } ? Widen<D> : ValueOf<S[K]['kind']> | undefined;
};
type Widen<D> = D extends number ? number : D extends boolean ? boolean : D extends string ? string : D;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** `listenAddress` → `--listen-address`. */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function convert(key: string, spec: FlagSpec, raw: string | boolean): ValueOf<FlagKind> {
  const where = `--${flagName(key)}${spec.env ? ` / ${envNames(spec)[0]}` : ''}`;
  switch (spec.kind) {
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      if (/^(1|true|yes)$/i.test(raw)) return true;
      if (/^(0|false|no|)$/i.test(raw)) return false;
      throw new ConfigError(`${where}: "${raw}" is not a boolean`);
    case 'number': {
      const n = Number(raw);
      if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(n))
        throw new ConfigError(`${where}: "${String(raw)}" is not a number`);
      return n;
    }
    case 'duration':
      try {
        return parseDuration(String(raw));
      } catch (err) {
        throw new ConfigError(`${where}: ${messageOf(err)}`);
      }
    case 'string':
      return String(raw);
  }
}

export interface ParsedConfig<S extends FlagsSpec> {
  config: ConfigOf<S>;
  /** `--help` or `-h` was given: print helpText() and exit 0. */
  help: boolean;
  /** `--version` was given: print the version and exit 0. */
  version: boolean;
}

export function parseConfig<S extends FlagsSpec>(
  spec: S,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): ParsedConfig<S> {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
    version: { type: 'boolean' },
  };
  const booleans = new Set<string>();
  for (const [key, s] of Object.entries(spec)) {
    for (const name of [flagName(key), ...(s.aliases ?? [])]) {
      options[name] = { type: s.kind === 'boolean' ? 'boolean' : 'string' };
      if (s.kind === 'boolean') booleans.add(name);
    }
  }
  // `--leader-elect=false` (how Kubernetes components take booleans), which parseArgs refuses for a boolean option.
  const explicit: Record<string, string> = {};
  const args = argv.filter((arg) => {
    const match = /^--([^=]+)=(.*)$/s.exec(arg);
    if (!match || !booleans.has(match[1] as string)) return true;
    explicit[match[1] as string] = match[2] as string;
    return false;
  });
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args, options, strict: true, allowPositionals: false }) as {
      values: Record<string, string | boolean | undefined>;
    });
  } catch (err) {
    throw new ConfigError(`${messageOf(err)} (see --help)`);
  }
  Object.assign(values, explicit);
  const config: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(spec)) {
    const fromFlag = [flagName(key), ...(s.aliases ?? [])].map((name) => values[name]).find((v) => v !== undefined);
    const fromEnv = envNames(s)
      .map((name) => env[name])
      .find((v) => v !== undefined && v !== '');
    const raw = fromFlag ?? fromEnv;
    config[key] = raw === undefined ? s.default : convert(key, s, raw);
  }
  return { config: config as ConfigOf<S>, help: values['help'] === true, version: values['version'] === true };
}

export function helpText(program: string, summary: string, spec: FlagsSpec): string {
  const rows = Object.entries(spec).map(([key, s]) => {
    const flag = `--${flagName(key)}${s.kind === 'boolean' ? '' : ` <${s.kind}>`}`;
    const def =
      s.default === undefined
        ? ''
        : ` (default ${s.kind === 'duration' ? formatDuration(s.default as number) : JSON.stringify(s.default)})`;
    const env = s.env ? ` [env ${envNames(s).join(', ')}]` : '';
    const aliases = s.aliases?.length ? ` (was ${s.aliases.map((a) => `--${a}`).join(', ')})` : '';
    return { flag, text: `${s.description}${def}${env}${aliases}` };
  });
  const width = Math.max(...rows.map((r) => r.flag.length), 6) + 2;
  const lines = rows.map((r) => `  ${r.flag.padEnd(width)}${r.text}`);
  return [
    `Usage: ${program} [flags]`,
    '',
    summary,
    '',
    'Flags:',
    ...lines,
    `  ${'-h, --help'.padEnd(width)}show this help`,
    `  ${'--version'.padEnd(width)}print the version and exit`,
    '',
  ].join('\n');
}
