// get, list and watch of sandboxes, answered from the view in memory (get
// also from the claim index and the owning node, through the reader), as
// Sandbox objects, Tables or PartialObjectMetadata as the Accept header asks.
import { AGENTS_GROUP, SandboxType, UPSTREAM_VERSION, type SandboxObjectList } from '@warmpool/api';
import { Hono, type Context } from 'hono';
import type { RouteAccess } from '../http/access/route-access.js';
import type { SandboxApiEnv, SandboxVerb } from './access.js';
import type { SandboxReader } from './reader.js';
import {
  ApiError,
  jsonResponse,
  notFound,
  partialOf,
  representationOf,
  tableOf,
  type Representation,
} from './responses.js';
import type { ServedSandbox } from './sandbox-object.js';
import { selectionOf } from './selectors.js';
import type { SandboxView } from './view.js';
import { watchResponse, type WatchOptions } from './watch.js';

export const GROUP_VERSION_PATH = `/apis/${AGENTS_GROUP}/${UPSTREAM_VERSION}`;
export const NAMESPACED = `${GROUP_VERSION_PATH}/namespaces/:namespace/${SandboxType.plural}`;

export interface ReadOptions extends WatchOptions {
  view: SandboxView;
  reader: SandboxReader;
  /** Why list/watch/get cannot be answered yet (caches, claim events); empty when they can. */
  notReadyReasons: () => string[];
}

type Access = RouteAccess<SandboxApiEnv, SandboxVerb>;

export function readRoutes(access: Access, options: ReadOptions): Hono<SandboxApiEnv> {
  const listOrWatch = (c: Context<SandboxApiEnv>): SandboxVerb => {
    const watch = c.req.query('watch');
    return watch === 'true' || watch === '1' ? 'watch' : 'list';
  };
  const collection = (c: Context<SandboxApiEnv>): Response => {
    const representation = readable(c, options);
    const namespace = c.req.param('namespace');
    if (listOrWatch(c) === 'watch') {
      // Hono answers HEAD with the GET route's headers and drops the body unread: a stream nobody reads or cancels.
      if (c.req.method === 'HEAD') throw new ApiError('MethodNotAllowed', 'a watch is not served to HEAD; use GET');
      return watchResponse(options, { namespace, query: (name) => c.req.query(name), representation });
    }
    return list(c, options, namespace, representation);
  };
  return new Hono<SandboxApiEnv>()
    .get(`${GROUP_VERSION_PATH}/${SandboxType.plural}`, access.allow(listOrWatch), collection)
    .get(NAMESPACED, access.allow(listOrWatch), collection)
    .get(`${NAMESPACED}/:name`, access.allow('get'), async (c) => {
      const representation = readable(c, options);
      const name = c.req.param('name');
      const served = await options.reader.get(c.req.param('namespace') ?? '', name);
      if (served === undefined) throw notFound(name);
      return jsonResponse(c, 200, represent([served], representation, served.resourceVersion, false, options.now()));
    });
}

/** The representation asked for, once the view can answer (503 until its caches and claim events are read). */
function readable(c: Context, options: ReadOptions): Representation {
  const representation = representationOf(c.req.header('accept'), c.req.query('includeObject'));
  const reasons = options.notReadyReasons();
  if (reasons.length > 0)
    throw new ApiError('ServiceUnavailable', `the Sandbox view is not ready: ${reasons.join('; ')}`, {
      retryAfterSeconds: 1,
    });
  return representation;
}

function list(
  c: Context,
  options: ReadOptions,
  namespace: string | undefined,
  representation: Representation,
): Response {
  const match = selectionOf({
    labelSelector: c.req.query('labelSelector'),
    fieldSelector: c.req.query('fieldSelector'),
  });
  const items: ServedSandbox[] = [];
  for (const served of options.view.items(namespace)) if (match(served)) items.push(served);
  items.sort((a, b) =>
    a.facts.namespace === b.facts.namespace
      ? compare(a.facts.name, b.facts.name)
      : compare(a.facts.namespace, b.facts.namespace),
  );
  const resourceVersion = options.view.resourceVersion;
  return jsonResponse(c, 200, represent(items, representation, resourceVersion, true, options.now()));
}

/** Sandboxes as the client asked for them: objects, a Table, or metadata only; a list or one. */
export function represent(
  items: readonly ServedSandbox[],
  representation: Representation,
  resourceVersion: string,
  asList: boolean,
  now: number,
): unknown {
  switch (representation.as) {
    case 'table':
      return tableOf(items, resourceVersion, representation.include, now);
    case 'metadata':
      return asList
        ? {
            kind: 'PartialObjectMetadataList',
            apiVersion: 'meta.k8s.io/v1',
            metadata: { resourceVersion },
            items: items.map(partialOf),
          }
        : partialOf(items[0] as ServedSandbox);
    case 'object':
      return asList
        ? ({
            apiVersion: `${AGENTS_GROUP}/${UPSTREAM_VERSION}`,
            kind: 'SandboxList',
            metadata: { resourceVersion },
            items: items.map((s) => s.object),
          } satisfies SandboxObjectList)
        : (items[0] as ServedSandbox).object;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
