// One call to a sandbox's runtime at its node (docs/sandbox-runtime.md): the
// checked operation's own path, the sandbox's token in place of the caller's
// credential, the body streamed through (never past its cap), and only the
// headers the runtime needs (content type and length, W3C trace context).
// Nothing the caller sent about where to dial is used; nothing the node
// answers but status, body and content headers goes back.
import { Transform, type Readable } from 'node:stream';
import { ownerAddrOrigin, TRACE_HEADERS } from '@warmpool/api';
import { Agent, errors, type Dispatcher } from 'undici';
import { sandboxRequestPath, type Operation } from './operation.js';
import type { SandboxRoute } from './resolver.js';

/** Request headers passed on to the sandbox, besides its Authorization. */
const FORWARDED_REQUEST_HEADERS = ['content-type', 'content-length', 'accept', ...TRACE_HEADERS] as const;
/** Response headers passed back to the caller. */
const FORWARDED_RESPONSE_HEADERS = ['content-type', 'content-length', 'content-disposition'] as const;

export interface ForwardRequest {
  method: 'GET' | 'POST';
  operation: Operation;
  route: SandboxRoute;
  headers: (name: string) => string | undefined;
  /** The request body as it arrives (null for none). */
  body: Readable | null;
  timeoutMs: number;
  /** Aborted when the caller went away: the call to the node is dropped with it. */
  callerGone?: AbortSignal;
}

export interface SandboxAnswer {
  status: number;
  headers: Record<string, string>;
  body: Readable;
}

/** Why a forward failed before the sandbox answered. */
export type ForwardFailure = 'unreachable' | 'timeout' | 'too-large' | 'caller-gone';

export class ForwardError extends Error {
  override name = 'ForwardError';
  readonly failure: ForwardFailure;
  constructor(failure: ForwardFailure, message: string, options?: ErrorOptions) {
    super(message, options);
    this.failure = failure;
  }
}

export interface ForwarderOptions {
  /** Connections kept per node (default 64). */
  connectionsPerNode?: number;
  connectTimeoutMs?: number;
}

export class Forwarder {
  readonly #agent: Agent;

  constructor(options: ForwarderOptions = {}) {
    this.#agent = new Agent({
      connections: options.connectionsPerNode ?? 64,
      connect: { timeout: options.connectTimeoutMs ?? 5_000 },
      keepAliveTimeout: 30_000,
    });
  }

  async forward(request: ForwardRequest): Promise<SandboxAnswer> {
    const headers: Record<string, string> = { authorization: `Bearer ${request.route.token}` };
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = request.headers(name);
      if (value !== undefined) headers[name] = value;
    }
    let tooLarge = false;
    // A declared length was checked against the cap already (and undici sends no more than it): the body passes as
    // is. Only a body without one (chunked) is counted on its way.
    const body =
      request.body === null || request.operation.maxBodyBytes === 0
        ? null
        : headers['content-length'] !== undefined
          ? request.body
          : request.body.pipe(capped(request.operation.maxBodyBytes, () => (tooLarge = true)));
    let answer: Dispatcher.ResponseData;
    try {
      answer = await this.#agent.request({
        origin: ownerAddrOrigin(request.route.ownerAddr),
        path: sandboxRequestPath(request.route.id, request.operation),
        method: request.method,
        headers,
        body,
        signal:
          request.callerGone === undefined
            ? AbortSignal.timeout(request.timeoutMs)
            : AbortSignal.any([AbortSignal.timeout(request.timeoutMs), request.callerGone]),
        // The runtime answers when the command ends: its wait is bounded by the signal, not by undici's defaults.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    } catch (err) {
      if (request.callerGone?.aborted === true)
        throw new ForwardError('caller-gone', 'the caller went away', { cause: err });
      if (tooLarge) throw new ForwardError('too-large', 'the body exceeded its cap', { cause: err });
      if (isTimeout(err)) throw new ForwardError('timeout', 'the sandbox did not answer in time', { cause: err });
      throw new ForwardError('unreachable', `the sandbox's node could not be reached: ${messageOf(err)}`, {
        cause: err,
      });
    }
    const passed: Record<string, string> = {};
    for (const name of FORWARDED_RESPONSE_HEADERS) {
      const value = answer.headers[name];
      if (typeof value === 'string') passed[name] = value;
    }
    return { status: answer.statusCode, headers: passed, body: answer.body };
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/** Passes at most `maxBytes` through; one byte more fails the stream (and so the upstream request). */
function capped(maxBytes: number, onExceeded: () => void): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > maxBytes) {
        onExceeded();
        done(new Error(`body over ${maxBytes} bytes`));
        return;
      }
      done(null, chunk);
    },
  });
}

function isTimeout(err: unknown): boolean {
  return (
    (err instanceof DOMException && err.name === 'TimeoutError') ||
    (err instanceof Error && err.name === 'TimeoutError') ||
    err instanceof errors.HeadersTimeoutError ||
    err instanceof errors.BodyTimeoutError
  );
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message;
  return String(err);
}
