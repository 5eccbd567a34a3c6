// The logging surface this library writes to. @warmpool/runtime's Logger
// satisfies it structurally, so apps pass theirs without this lib depending on it.

export interface KubeLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const silentKubeLogger: KubeLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};

export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const fields: Record<string, unknown> = { err: err.message, errName: err.name };
    if (err.cause instanceof Error) fields['cause'] = err.cause.message;
    if ('statusCode' in err) fields['statusCode'] = err.statusCode;
    return fields;
  }
  return { err: String(err) };
}
