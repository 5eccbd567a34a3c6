export interface HostPort {
  host: string;
  port: number;
}

/** "HOST:PORT", "[::1]:PORT" or ":PORT" (all interfaces). */
export function parseHostPort(text: string): HostPort {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65_535) throw new Error(`invalid address "${text}" (want HOST:PORT)`);
  const host = m[1] ?? m[2] ?? '';
  return { host: host === '' ? '0.0.0.0' : host, port };
}

export function formatHostPort({ host, port }: HostPort): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
