// Structured logs: one JSON object per line on stderr, so a log pipeline
// (kubectl logs | jq, Loki, ...) can filter on fields rather than parse prose;
// or, with the text format, one readable line per record for a person at a
// terminal. An error is logged with its name, message, code, stack and the
// whole cause chain (AggregateError's errors too), in either format.

import { ConfigError } from './config.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'json' | 'text';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'text'];
export type LogFields = Record<string, unknown>;

const LEVEL_RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; stderr by default (stdout stays free for program output). */
  write?: (line: string) => void;
  /** json (default): one JSON object per line; text: `ts LEVEL component msg key=value …`, a stack indented below. */
  format?: LogFormat;
}

/** A `--log-format` value; throws (with the choices) on anything else, as a bad flag should. */
export function parseLogFormat(value: string | undefined): LogFormat {
  if (value === undefined || value === '') return 'json';
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  throw new ConfigError(`--log-format must be one of ${LOG_FORMATS.join(', ')}, not ${JSON.stringify(value)}`);
}

/** A level, or `fallback` for anything else (an environment default, where no flag names the mistake). */
export function parseLogLevel(value: string | undefined, fallback: LogLevel = 'info'): LogLevel {
  return value !== undefined && Object.hasOwn(LEVEL_RANK, value) ? (value as LogLevel) : fallback;
}

/** A `--log-level` value; throws (with the choices) on anything else, as a bad flag should. */
export function parseLogLevelFlag(value: string | undefined): LogLevel {
  if (value === undefined || value === '') return 'info';
  if (Object.hasOwn(LEVEL_RANK, value)) return value as LogLevel;
  throw new ConfigError(
    `--log-level must be one of ${Object.keys(LEVEL_RANK).join(', ')}, not ${JSON.stringify(value)}`,
  );
}

/** The causes followed at most this deep (a cause chain may loop). */
const MAX_CAUSE_DEPTH = 8;

function serializeError(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return err;
  const out: LogFields = { name: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out['code'] = code;
  if (err.stack !== undefined) out['stack'] = err.stack;
  if (depth < MAX_CAUSE_DEPTH) {
    if (err instanceof AggregateError) out['errors'] = err.errors.map((e: unknown) => serializeError(e, depth + 1));
    if (err.cause !== undefined) out['cause'] = serializeError(err.cause, depth + 1);
  }
  return out;
}

/** A serialized error as text lines: its stack (or name: message), then each cause, indented. */
function errorLines(err: unknown, indent = '    '): string[] {
  if (err === null || typeof err !== 'object') return [`${indent}${String(err)}`];
  const e = err as LogFields;
  const head =
    typeof e['stack'] === 'string'
      ? (e['stack'] as string).split('\n')
      : [`${String(e['name'])}: ${String(e['message'])}`];
  const lines = head.map((line, i) => `${indent}${i === 0 ? '' : '  '}${line.trim()}`);
  if (e['code'] !== undefined) lines[0] += ` [${String(e['code'])}]`;
  for (const inner of (e['errors'] as unknown[] | undefined) ?? [])
    lines.push(`${indent}  error:`, ...errorLines(inner, `${indent}    `));
  if (e['cause'] !== undefined) lines.push(`${indent}caused by:`, ...errorLines(e['cause'], indent));
  return lines;
}

/**
 * JSON.stringify that never throws, so a log line never turns into its caller's failure: a value it refuses (a cycle,
 * a BigInt) is written again with each object already seen as "[Circular]" and a BigInt as its digits, and one it
 * still refuses (a toJSON or a getter that throws) as "[unserializable]".
 */
function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    try {
      return JSON.stringify(value, seenOnce());
    } catch {
      return '"[unserializable]"';
    }
  }
}

function seenOnce(): (key: string, value: unknown) => unknown {
  const seen = new WeakSet<object>();
  return (_key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (value === null || typeof value !== 'object') return value;
    if (seen.has(value)) return '[Circular]';
    seen.add(value);
    return value;
  };
}

/** The record as one JSON object; one JSON refuses is written field by field, each through safeJson. */
function jsonLine(record: LogFields): string {
  try {
    return JSON.stringify(record);
  } catch {
    const fields = Object.entries(record).flatMap(([key, value]) => {
      const json = safeJson(value);
      return json === undefined ? [] : [`${JSON.stringify(key)}:${json}`];
    });
    return `{${fields.join(',')}}`;
  }
}

function textValue(value: unknown): string {
  const text = typeof value === 'string' || typeof value === 'bigint' ? String(value) : safeJson(value);
  return /^[^\s"=]+$/.test(text ?? '') ? (text ?? '') : JSON.stringify(text);
}

/** `ts LEVEL component msg key=value …`; errors' stacks and causes on the lines below. */
function textLine(record: LogFields): string {
  const { ts, level, component, msg, ...fields } = record;
  const parts = [String(ts), String(level).toUpperCase().padEnd(5), String(component), String(msg)];
  const below: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (value !== null && typeof value === 'object' && 'message' in value && 'name' in value) {
      const e = value as LogFields;
      parts.push(`${key}=${textValue(`${String(e['name'])}: ${String(e['message'])}`)}`);
      below.push(...errorLines(value));
    } else parts.push(`${key}=${textValue(value)}`);
  }
  return [parts.join(' '), ...below].join('\n');
}

export function createLogger(component: string, options: LoggerOptions = {}): Logger {
  const min = LEVEL_RANK[options.level ?? parseLogLevel(process.env['LOG_LEVEL'])];
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const render = options.format === 'text' ? textLine : jsonLine;

  const make = (base: LogFields): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
      if (LEVEL_RANK[level] < min) return;
      const record: LogFields = { ts: new Date().toISOString(), level, component, msg, ...base };
      if (fields)
        for (const [k, v] of Object.entries(fields))
          record[k] = k === 'err' || v instanceof Error ? serializeError(v) : v;
      write(render(record));
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      child: (fields) => make({ ...base, ...fields }),
    };
  };
  return make({});
}

/** For tests and library defaults: drops everything. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
