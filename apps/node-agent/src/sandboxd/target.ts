// Where sandboxd listens, from --sandboxd-url: an http origin or a unix socket.
export interface SandboxdTarget {
  origin: string;
  socketPath?: string;
}

/** `unix:/run/sandboxd.sock` → a socket path; anything else must be an http URL. */
export function parseSandboxdUrl(url: string): SandboxdTarget {
  if (url.startsWith('unix:')) {
    const socketPath = url.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
    if (socketPath === '') throw new Error(`invalid sandboxd URL "${url}" (want unix:/path/to/socket)`);
    return { origin: 'http://localhost', socketPath };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`invalid sandboxd URL "${url}" (want http://host:port or unix:/path)`);
  }
  if (parsed.protocol !== 'http:')
    throw new Error(`invalid sandboxd URL "${url}": only http:// and unix: are supported`);
  return { origin: parsed.origin };
}
