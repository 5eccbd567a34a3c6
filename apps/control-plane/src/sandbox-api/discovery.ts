// What kubectl and the aggregator ask before they ask for Sandboxes: the
// discovery documents (/apis, the group, the version's resource list) and
// the OpenAPI v2 and v3 documents. Legacy discovery only: the aggregator asks
// /apis for the aggregated form first and, given a plain APIGroupList, falls
// back to the version's resource list, as it does for metrics-server.
import { createHash } from 'node:crypto';
import { AGENTS_GROUP, SandboxType, UPSTREAM_VERSION } from '@warmpool/api';

const GROUP_VERSION = `${AGENTS_GROUP}/${UPSTREAM_VERSION}`;
export const RESOURCE_VERBS = ['create', 'delete', 'get', 'list', 'watch'] as const;

const versionEntry = { groupVersion: GROUP_VERSION, version: UPSTREAM_VERSION };

export const API_GROUP = {
  kind: 'APIGroup',
  apiVersion: 'v1',
  name: AGENTS_GROUP,
  versions: [versionEntry],
  preferredVersion: versionEntry,
};

export const API_GROUP_LIST = {
  kind: 'APIGroupList',
  apiVersion: 'v1',
  groups: [{ name: AGENTS_GROUP, versions: [versionEntry], preferredVersion: versionEntry }],
};

export const API_RESOURCE_LIST = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: GROUP_VERSION,
  resources: [
    {
      name: SandboxType.plural,
      singularName: 'sandbox',
      namespaced: true,
      kind: SandboxType.kind,
      verbs: [...RESOURCE_VERBS],
      categories: ['warmpool'],
    },
  ],
};

const GVK = [{ group: AGENTS_GROUP, version: UPSTREAM_VERSION, kind: SandboxType.kind }];
const LIST_GVK = [{ group: AGENTS_GROUP, version: UPSTREAM_VERSION, kind: 'SandboxList' }];
const SANDBOX_DEF = 'io.x-k8s.agents.v1beta1.Sandbox';
const LIST_DEF = 'io.x-k8s.agents.v1beta1.SandboxList';
const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
const LIST_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta';
const STATUS = 'io.k8s.apimachinery.pkg.apis.meta.v1.Status';

/** The Sandbox schema, with `ref` turning a definition name into a reference of the document's kind. */
function schemas(ref: (name: string) => string): Record<string, unknown> {
  const str = { type: 'string' };
  return {
    [SANDBOX_DEF]: {
      description:
        "A claimed sandbox, served by warmpool from what the nodes report (never stored in etcd). Its name is its claim's.",
      type: 'object',
      properties: {
        apiVersion: str,
        kind: str,
        metadata: { $ref: ref(OBJECT_META) },
        spec: {
          type: 'object',
          properties: {
            warmPoolRef: {
              type: 'object',
              required: ['name'],
              properties: { name: { ...str, description: 'The SandboxWarmPool to claim from.' } },
            },
            ttlSeconds: {
              type: 'integer',
              format: 'int32',
              description: 'The lease asked for at create, 1 to 86400 (default 300).',
            },
          },
        },
        status: {
          type: 'object',
          properties: {
            nodeName: {
              ...str,
              description: 'The node holding the sandbox; <cluster>/<node> when another cluster serves it.',
            },
            cluster: {
              ...str,
              description: 'The peer cluster that serves it (a spilled Env claim); absent for this one.',
            },
            podIPs: {
              type: 'array',
              items: str,
              description:
                "The host of the sandbox's owner address: its node daemon's, shared by that node's sandboxes. Dial it with ownerAddr's port and the sandbox's token; it does not identify one sandbox.",
            },
            ownerAddr: { ...str, description: 'host:port to reach the sandbox.' },
            deadline: { ...str, format: 'date-time', description: 'When the node reaps it unless renewed.' },
            tier: { ...str, description: 'warm or cold.' },
            sandboxID: { ...str, description: "sandboxd's id." },
            conditions: {
              type: 'array',
              items: {
                type: 'object',
                required: ['type', 'status'],
                properties: {
                  type: str,
                  status: str,
                  reason: str,
                  message: str,
                  lastTransitionTime: { ...str, format: 'date-time' },
                },
              },
            },
          },
        },
      },
      'x-kubernetes-group-version-kind': GVK,
    },
    [LIST_DEF]: {
      type: 'object',
      required: ['items'],
      properties: {
        apiVersion: str,
        kind: str,
        metadata: { $ref: ref(LIST_META) },
        items: { type: 'array', items: { $ref: ref(SANDBOX_DEF) } },
      },
      'x-kubernetes-group-version-kind': LIST_GVK,
    },
  };
}

/** The meta.k8s.io shapes the documents refer to, reduced to what a Sandbox uses (each document stands alone). */
function metaSchemas(): Record<string, unknown> {
  const str = { type: 'string' };
  const map = { type: 'object', additionalProperties: str };
  return {
    [OBJECT_META]: {
      type: 'object',
      properties: {
        name: str,
        generateName: str,
        namespace: str,
        uid: str,
        resourceVersion: str,
        creationTimestamp: { ...str, format: 'date-time' },
        labels: map,
        annotations: map,
      },
    },
    [LIST_META]: { type: 'object', properties: { resourceVersion: str, continue: str } },
    [STATUS]: {
      type: 'object',
      properties: {
        kind: str,
        apiVersion: str,
        status: str,
        message: str,
        reason: str,
        code: { type: 'integer', format: 'int32' },
      },
    },
  };
}

const COLLECTION = `/apis/${GROUP_VERSION}/namespaces/{namespace}/${SandboxType.plural}`;
const ITEM = `${COLLECTION}/{name}`;
const ALL = `/apis/${GROUP_VERSION}/${SandboxType.plural}`;

type Ref = (name: string) => string;

function paths(
  ref: Ref,
  body: (schema: unknown) => Record<string, unknown>,
  response: (schema: unknown) => unknown,
  param: (name: string, where: 'path' | 'query', type: string) => unknown,
): Record<string, unknown> {
  const ns = param('namespace', 'path', 'string');
  const name = param('name', 'path', 'string');
  const listParams = [
    'labelSelector',
    'fieldSelector',
    'resourceVersion',
    'timeoutSeconds',
    'watch',
    'allowWatchBookmarks',
  ].map((p) =>
    param(
      p,
      'query',
      p === 'timeoutSeconds' ? 'integer' : p === 'watch' || p === 'allowWatchBookmarks' ? 'boolean' : 'string',
    ),
  );
  const action = (verb: string, kind = 'Sandbox'): Record<string, unknown> => ({
    'x-kubernetes-action': verb,
    'x-kubernetes-group-version-kind': { group: AGENTS_GROUP, version: UPSTREAM_VERSION, kind },
    tags: ['agentsXK8sIo_v1beta1'],
  });
  const sandbox = { $ref: ref(SANDBOX_DEF) };
  const list = { $ref: ref(LIST_DEF) };
  const status = { $ref: ref(STATUS) };
  return {
    [ALL]: {
      get: {
        operationId: 'listAgentsXK8sIoV1beta1SandboxForAllNamespaces',
        parameters: listParams,
        responses: { 200: response(list) },
        ...action('list'),
      },
    },
    [COLLECTION]: {
      parameters: [ns],
      get: {
        operationId: 'listAgentsXK8sIoV1beta1NamespacedSandbox',
        parameters: listParams,
        responses: { 200: response(list) },
        ...action('list'),
      },
      post: {
        operationId: 'createAgentsXK8sIoV1beta1NamespacedSandbox',
        // kubectl sends fieldValidation (server-side validation) only to paths that declare it.
        parameters: [
          param('dryRun', 'query', 'string'),
          param('fieldManager', 'query', 'string'),
          param('fieldValidation', 'query', 'string'),
        ],
        ...body(sandbox),
        responses: { 201: response(sandbox) },
        ...action('post'),
      },
    },
    [ITEM]: {
      parameters: [ns, name],
      get: {
        operationId: 'readAgentsXK8sIoV1beta1NamespacedSandbox',
        responses: { 200: response(sandbox) },
        ...action('get'),
      },
      delete: {
        operationId: 'deleteAgentsXK8sIoV1beta1NamespacedSandbox',
        responses: { 200: response(status) },
        ...action('delete'),
      },
    },
  };
}

function hashOf(doc: unknown): string {
  return createHash('sha512').update(JSON.stringify(doc)).digest('hex').slice(0, 128).toUpperCase();
}

export const OPENAPI_V2 = (() => {
  const ref: Ref = (name) => `#/definitions/${name}`;
  return {
    swagger: '2.0',
    info: { title: 'warmpool Sandbox API', version: UPSTREAM_VERSION },
    paths: paths(
      ref,
      (schema) => ({ parameters: [{ name: 'body', in: 'body', required: true, schema }] }),
      (schema) => ({ description: 'OK', schema }),
      (name, where, type) => ({
        name,
        in: where,
        type,
        ...(where === 'path' ? { required: true } : {}),
        uniqueItems: true,
      }),
    ),
    // Self-contained: where the meta.k8s.io shapes differ from the apiserver's, the aggregator's merge renames ours.
    definitions: { ...schemas(ref), ...metaSchemas() },
  };
})();

export const OPENAPI_V3_GROUP_VERSION = (() => {
  const ref: Ref = (name) => `#/components/schemas/${name}`;
  return {
    openapi: '3.0.0',
    info: { title: 'warmpool Sandbox API', version: UPSTREAM_VERSION },
    paths: paths(
      ref,
      (schema) => ({ requestBody: { required: true, content: { 'application/json': { schema } } } }),
      (schema) => ({ description: 'OK', content: { 'application/json': { schema } } }),
      (name, where, type) => ({
        name,
        in: where,
        schema: { type, uniqueItems: true },
        ...(where === 'path' ? { required: true } : {}),
      }),
    ),
    components: { schemas: { ...schemas(ref), ...metaSchemas() } },
  };
})();

export const OPENAPI_V3_PATH = `apis/${GROUP_VERSION}`;
export const OPENAPI_V3_HASH = hashOf(OPENAPI_V3_GROUP_VERSION);

/** /openapi/v3: where each group-version's document is, with its hash (clients cache by it). */
export const OPENAPI_V3_INDEX = {
  paths: { [OPENAPI_V3_PATH]: { serverRelativeURL: `/openapi/v3/${OPENAPI_V3_PATH}?hash=${OPENAPI_V3_HASH}` } },
};
export const OPENAPI_V2_ETAG = `"${hashOf(OPENAPI_V2)}"`;
