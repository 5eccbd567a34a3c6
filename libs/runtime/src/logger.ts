// Structured logs: one JSON object per line on stderr, so a log pipeline
// (kubectl logs | jq, Loki, ...) can filter on fields rather than parse prose.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
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
}

export function parseLogLevel(value: string | undefined, fallback: LogLevel = 'info'): LogLevel {
  return value !== undefined && value in LEVEL_RANK ? (value as LogLevel) : fallback;
}

function serializeError(err: unknown): unknown {
  if (err instanceof Error) {
    const out: LogFields = { message: err.message, name: err.name };
    if (err.cause !== undefined) out['cause'] = serializeError(err.cause);
    return out;
  }
  return err;
}

export function createLogger(component: string, options: LoggerOptions = {}): Logger {
  const min = LEVEL_RANK[options.level ?? parseLogLevel(process.env['LOG_LEVEL'])];
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'));

  const make = (base: LogFields): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
      if (LEVEL_RANK[level] < min) return;
      const record: LogFields = { ts: new Date().toISOString(), level, component, msg, ...base };
      if (fields)
        for (const [k, v] of Object.entries(fields))
          record[k] = k === 'err' || v instanceof Error ? serializeError(v) : v;
      write(JSON.stringify(record));
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
