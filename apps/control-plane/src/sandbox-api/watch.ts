// A watch of sandboxes as kube-apiserver streams one: ADDED / MODIFIED /
// DELETED lines from the view after a resourceVersion (or the current objects
// first), BOOKMARKs when asked, a 410 Expired ERROR for a resourceVersion this
// replica's history no longer holds (or never handed out), and an end after
// the watch's timeout. Invariants: everything up to the start is read before
// subscribing, synchronously, so no change falls between; the response's
// headers go out at once (client-go's Watch() returns only once it has them);
// a client that does not read is let go once its backlog passes 16 MiB,
// never buffered without bound (it relists and watches again).
import { AGENTS_GROUP, SandboxType, UPSTREAM_VERSION, type KubeStatus, type WatchEventType } from '@warmpool/api';
import type { SandboxApiMetrics } from './metrics.js';
import { ApiError, partialOf, statusOf, tableOf, type Representation } from './responses.js';
import { ServedSandbox } from './sandbox-object.js';
import { selectionOf } from './selectors.js';
import type { SandboxChange, SandboxView } from './view.js';
import { watchStartOf, watchTimeoutMs } from './watch-params.js';

const MAX_WATCH_BACKLOG_BYTES = 16 * 1024 * 1024;
const STREAM_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-cache' };

/** The watches being streamed, so that closing the server ends them. */
export class OpenWatches {
  readonly #ends = new Set<() => void>();

  add(end: () => void): void {
    this.#ends.add(end);
  }

  /** Whether `end` was still open (it ends once). */
  delete(end: () => void): boolean {
    return this.#ends.delete(end);
  }

  endAll(): void {
    for (const end of [...this.#ends]) end();
  }
}

export interface WatchOptions {
  view: SandboxView;
  watches: OpenWatches;
  metrics?: SandboxApiMetrics | undefined;
  now: () => number;
  /** Bookmarks on watches that allow them, this often. */
  bookmarkIntervalMs: number;
  /** A watch without timeoutSeconds ends after between this and twice this. */
  defaultWatchTimeoutMs: number;
}

export interface WatchRequest {
  namespace: string | undefined;
  /** The request's query parameter of that name. */
  query: (name: string) => string | undefined;
  representation: Representation;
}

/** The watch's response; a malformed parameter throws a 400 ApiError before anything is sent. */
export function watchResponse(options: WatchOptions, request: WatchRequest): Response {
  const { view } = options;
  const { namespace, query } = request;
  const match = selectionOf({ labelSelector: query('labelSelector'), fieldSelector: query('fieldSelector') });
  const sendInitialEvents = query('sendInitialEvents') === 'true';
  const start = watchStartOf(query('resourceVersion') ?? null, sendInitialEvents);
  const timeoutMs = watchTimeoutMs(query('timeoutSeconds') ?? null, { defaultMs: options.defaultWatchTimeoutMs });

  let initial: ServedSandbox[] = [];
  let replay: SandboxChange[] = [];
  if (start.initial) initial = [...view.items(namespace)].filter((served) => match(served));
  else {
    const changes = view.changesSince(start.since);
    if (changes === 'gone') return goneResponse(start.since);
    replay = changes;
  }
  const lines = new WatchLines(options, request, match);
  let chunk = '';
  for (const served of initial) chunk += lines.event('ADDED', served, served.resourceVersion);
  for (const change of replay) chunk += lines.change(change) ?? '';
  const bookmarks = query('allowWatchBookmarks') === 'true';
  // A bookmark at once (the end of the initial events when they were asked for): a watch with nothing to report
  // still shows its client a current resourceVersion, and every proxy in between a first byte of body.
  if (bookmarks) chunk += lines.bookmark(sendInitialEvents);

  const encoder = new TextEncoder();
  let end = (): void => undefined;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        if (chunk !== '') controller.enqueue(encoder.encode(chunk));
        const unsubscribe = view.subscribe((change) => {
          const line = lines.change(change);
          if (line === undefined) return;
          controller.enqueue(encoder.encode(line));
          if ((controller.desiredSize ?? 0) < 0) end();
        });
        const timers = [setTimeout(() => end(), timeoutMs)];
        if (bookmarks)
          timers.push(
            setInterval(() => controller.enqueue(encoder.encode(lines.bookmark(false))), options.bookmarkIntervalMs),
          );
        end = () => {
          if (!options.watches.delete(end)) return;
          unsubscribe();
          for (const timer of timers) clearTimeout(timer);
          options.metrics?.watchEnded();
          if (!cancelled) controller.close();
        };
        options.watches.add(end);
      },
      // The client went away.
      cancel() {
        cancelled = true;
        end();
      },
    },
    { highWaterMark: MAX_WATCH_BACKLOG_BYTES, size: (line) => line.byteLength },
  );
  options.metrics?.watchStarted();
  return new Response(stream, { status: 200, headers: { ...STREAM_HEADERS, 'transfer-encoding': 'chunked' } });
}

/** A resourceVersion the history no longer holds: one ERROR event, and the client relists. */
function goneResponse(since: number): Response {
  const gone: KubeStatus = statusOf(
    new ApiError(
      'Expired',
      `too old resource version: ${since} (this replica's history starts later, or it was another replica's); list again`,
    ),
  );
  return new Response(`${JSON.stringify({ type: 'ERROR', object: gone })}\n`, {
    status: 200,
    headers: STREAM_HEADERS,
  });
}

/** One watch's event lines, in its representation and scope. */
class WatchLines {
  readonly #options: WatchOptions;
  readonly #request: WatchRequest;
  readonly #match: (served: ServedSandbox) => boolean;
  /** A Table's column definitions go with its first row only. */
  #tableHeadersSent = false;

  constructor(options: WatchOptions, request: WatchRequest, match: (served: ServedSandbox) => boolean) {
    this.#options = options;
    this.#request = request;
    this.#match = match;
  }

  event(type: WatchEventType, served: ServedSandbox, rv: number | string): string {
    const { representation } = this.#request;
    let object: unknown;
    if (representation.as === 'table') {
      object = tableOf([served], String(rv), representation.include, this.#options.now(), !this.#tableHeadersSent);
      this.#tableHeadersSent = true;
    } else if (representation.as === 'metadata') object = partialOf(served);
    else object = served.object;
    return `${JSON.stringify({ type, object })}\n`;
  }

  /** The line a change makes for this watch; with a selector, a MODIFIED in or out of it is an ADDED or DELETED. */
  change(change: SandboxChange): string | undefined {
    const now = this.#inScope(change.sandbox);
    const before = change.previous !== undefined && this.#inScope(change.previous);
    if (change.type !== 'MODIFIED')
      return now ? this.event(change.type, change.sandbox, change.resourceVersion) : undefined;
    if (now && before) return this.event('MODIFIED', change.sandbox, change.resourceVersion);
    if (now) return this.event('ADDED', change.sandbox, change.resourceVersion);
    if (before && change.previous !== undefined) {
      const last = new ServedSandbox(change.previous.facts, String(change.resourceVersion));
      return this.event('DELETED', last, change.resourceVersion);
    }
    return undefined;
  }

  bookmark(initialEventsEnd: boolean): string {
    const metadata = {
      resourceVersion: this.#options.view.resourceVersion,
      ...(initialEventsEnd ? { annotations: { 'k8s.io/initial-events-end': 'true' } } : {}),
    };
    const object = { apiVersion: `${AGENTS_GROUP}/${UPSTREAM_VERSION}`, kind: SandboxType.kind, metadata };
    return `${JSON.stringify({ type: 'BOOKMARK', object })}\n`;
  }

  #inScope(served: ServedSandbox): boolean {
    const { namespace } = this.#request;
    return (namespace === undefined || served.facts.namespace === namespace) && this.#match(served);
  }
}
