// A tiny loopback client for contract tests: every call answers status + body,
// with the node's root token unless told otherwise.
import { httpCall, type HttpAnswer } from '@warmpool/harness';

export type Answer = HttpAnswer;

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

  call(method: string, path: string, options: CallOptions = {}): Promise<Answer> {
    const { body, ...rest } = options;
    const sent = typeof body === 'string' ? { rawBody: body } : body === undefined ? {} : { body };
    return httpCall(this.base, method, path, {
      ...rest,
      ...sent,
      token: options.token === undefined ? this.rootToken : options.token,
    });
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
