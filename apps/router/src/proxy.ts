// The second half of a proxied request, once the caller is admitted: the
// Sandbox's route from the Kubernetes API, then the call to its node, whose
// answer goes back as it comes (status, content headers, body streamed).
// Served by @hono/node-server the body is read off Node's request and the
// answer written on Node's response, with no Web streams in between.
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import { ForwardError, type Forwarder, type SandboxAnswer } from './forwarder.js';
import type { RouterMetrics } from './metrics.js';
import type { Operation } from './operation.js';
import { refusal, type Refusal } from './refusal.js';
import type { SandboxResolver } from './resolver.js';
import type { Target } from './target.js';
import type { Logger } from '@warmpool/runtime';

export interface ProxyContext {
  method: 'GET' | 'POST';
  operation: Operation;
  target: Target;
  caller: string;
  started: number;
  header: (name: string) => string | undefined;
  refuse: (refused: Refusal) => Response;
  resolver: SandboxResolver;
  forwarder: Forwarder;
  metrics: RouterMetrics;
  proxyTimeoutMs: number;
  logger: Logger;
}

/** As in the node agent: node-server skips its own write only for a native "already sent" marker. */
const markerIsNative = Object.getOwnPropertySymbols(RESPONSE_ALREADY_SENT).length === 0;

export async function proxy(c: Context<{ Bindings: HttpBindings }>, p: ProxyContext): Promise<Response> {
  const { target, operation } = p;
  let resolution;
  try {
    resolution = await p.resolver.resolve(target.namespace, target.name);
  } catch (err) {
    p.logger.warn('cannot resolve a sandbox', { namespace: target.namespace, name: target.name, err });
    return p.refuse(refusal('ReviewUnavailable', 'the Kubernetes API could not be asked where the sandbox is'));
  }
  if (resolution.kind === 'not-found') return p.refuse(refusal('SandboxNotFound', resolution.why));
  if (resolution.kind === 'expired') return p.refuse(refusal('SandboxExpired', resolution.why));
  const env = c.env as Partial<HttpBindings> | undefined;
  const incoming = env?.incoming;
  const body = p.method === 'GET' ? null : (incoming ?? bodyOf(c));
  // A caller that hangs up mid-call (before its answer was written) takes the call to the node with it.
  const callerGone = new AbortController();
  env?.outgoing?.once('close', () => callerGone.abort());
  let answer: SandboxAnswer;
  try {
    answer = await p.forwarder.forward({
      method: p.method,
      operation,
      route: resolution.route,
      headers: p.header,
      body,
      timeoutMs: Math.min(target.clientTimeoutMs ?? p.proxyTimeoutMs, p.proxyTimeoutMs),
      callerGone: callerGone.signal,
    });
  } catch (err) {
    if (!(err instanceof ForwardError)) throw err;
    if (err.failure === 'caller-gone') {
      p.logger.debug('caller went away', { namespace: target.namespace, name: target.name });
      return p.refuse(refusal('BackendUnavailable', 'the caller went away'));
    }
    p.logger.warn('forward failed', { namespace: target.namespace, name: target.name, failure: err.failure, err });
    if (err.failure === 'too-large')
      return p.refuse(refusal('PayloadTooLarge', `${operation.name} takes at most ${operation.maxBodyBytes} bytes`));
    if (err.failure === 'timeout') return p.refuse(refusal('BackendTimeout', err.message));
    return p.refuse(refusal('BackendUnavailable', `Could not connect to the backend sandbox: ${target.name}`));
  }
  // The node no longer knows the sandbox by this id and token: the route is stale.
  if (answer.status === 404 && answer.headers['content-type']?.includes('json') === true)
    p.resolver.forget(target.namespace, target.name);
  p.metrics.answered(operation.name, answer.status, p.started);
  p.logger.debug('forwarded', {
    operation: operation.name,
    namespace: target.namespace,
    name: target.name,
    caller: p.caller,
    status: answer.status,
  });
  const outgoing = env?.outgoing;
  if (markerIsNative && outgoing !== undefined) {
    outgoing.writeHead(answer.status, answer.headers);
    pipeline(answer.body, outgoing).catch((err: unknown) =>
      p.logger.debug('answer cut off', { name: target.name, err }),
    );
    return RESPONSE_ALREADY_SENT;
  }
  return new Response(Readable.toWeb(answer.body) as ReadableStream, {
    status: answer.status,
    headers: answer.headers,
  });
}

/** The body off Hono's Request (app.request() in a test): as a Node stream, as the forwarder takes it. */
function bodyOf(c: Context): Readable | null {
  const stream = c.req.raw.body;
  return stream === null ? null : Readable.fromWeb(stream as WebReadableStream);
}
