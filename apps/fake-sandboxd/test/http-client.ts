// A tiny loopback client for contract tests: every call answers status + body.

export interface Answer {
  status: number;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
}

export interface CallOptions {
  /** Bearer token; null sends no Authorization header. Defaults to the client's root token. */
  token?: string | null;
  /** A raw string body sent as is, or a value sent as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
}

export class SandboxdClient {
  readonly base: string;
  private readonly rootToken: string | null;

  constructor(base: string, rootToken: string | null) {
    this.base = base;
    this.rootToken = rootToken;
  }

  async call(method: string, path: string, options: CallOptions = {}): Promise<Answer> {
    const token = options.token === undefined ? this.rootToken : options.token;
    const headers: Record<string, string> = { ...options.headers };
    if (token !== null) headers['authorization'] = `Bearer ${token}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(this.base + path, { method, headers, body });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, text, json };
  }

  get(path: string, options?: CallOptions): Promise<Answer> {
    return this.call('GET', path, options);
  }

  post(path: string, body?: unknown, options?: CallOptions): Promise<Answer> {
    return this.call('POST', path, { ...options, body });
  }

  put(path: string, body?: unknown, options?: CallOptions): Promise<Answer> {
    return this.call('PUT', path, { ...options, body });
  }

  delete(path: string, options?: CallOptions): Promise<Answer> {
    return this.call('DELETE', path, options);
  }
}

// Re-export kept for branches in flight; import from @warmpool/harness
export { eventually } from '@warmpool/harness';
