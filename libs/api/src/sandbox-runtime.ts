// The sandbox runtime wire (docs/sandbox-runtime.md): what upstream
// agent-sandbox's clients send to a router (`POST /execute`, `POST /upload`,
// `GET /download|list|exists/{path}` with the X-Sandbox-* headers), what the
// router answers, and what a sandbox serves at its ownerAddr under
// `/v1/sandboxes/{id}/runtime/` with its own token. Written once here: the
// router and fake-sandboxd both read it.
import { z } from 'zod';
import { SANDBOX_SECRET_TYPE } from './crds.js';

/** The five operations, as upstream's legacy runtime names its routes. */
export const RUNTIME_OPERATIONS = ['execute', 'upload', 'download', 'list', 'exists'] as const;
export type RuntimeOperation = (typeof RUNTIME_OPERATIONS)[number];

/** Operations with a `{path}` segment after the operation. */
export const PATH_OPERATIONS = ['download', 'list', 'exists'] as const satisfies readonly RuntimeOperation[];
export type PathOperation = (typeof PATH_OPERATIONS)[number];

/** Upstream's conformance limits: command output (stdout + stderr), file payloads, listing and exists answers. */
export const MAX_COMMAND_OUTPUT_BYTES = 16 * 1024 * 1024;
export const MAX_FILE_BYTES = 256 * 1024 * 1024;
export const MAX_METADATA_BYTES = 8 * 1024 * 1024;
/** An `/execute` body: a JSON object with one command string; upstream sets no cap, a router needs one. */
export const MAX_EXECUTE_BODY_BYTES = 1024 * 1024;
/** Room for a multipart envelope (boundaries, part headers, a long filename) around one file of MAX_FILE_BYTES. */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** The headers upstream's clients send on every request (Node lower-cases them). */
export const SANDBOX_ID_HEADER = 'x-sandbox-id';
export const SANDBOX_NAMESPACE_HEADER = 'x-sandbox-namespace';
export const SANDBOX_PORT_HEADER = 'x-sandbox-port';
/** Seconds the Python client will wait (its `timeout`), a bound for the router's own wait. */
export const SANDBOX_TIMEOUT_HEADER = 'x-sandbox-timeout';
/** Upstream's defaults when a header is absent: namespace `default`, the runtime's port 8888. */
export const DEFAULT_SANDBOX_NAMESPACE = 'default';
export const DEFAULT_SANDBOX_PORT = 8888;

/** W3C trace context, passed through to the sandbox untouched. */
export const TRACE_HEADERS = ['traceparent', 'tracestate'] as const;

/** `POST /execute`. */
export const executeRequestSchema = z.object({ command: z.string() }).loose();
export type ExecuteRequest = z.output<typeof executeRequestSchema>;

/** Its answer: a command that ran (whatever its exit code) is 200. */
export const executeResponseSchema = z.object({
  stdout: z.string(),
  stderr: z.string(),
  exit_code: z.number().int(),
});
export type ExecuteResponse = z.output<typeof executeResponseSchema>;

/** One entry of `GET /list/{path}`: `mod_time` is POSIX seconds (a float), as upstream's runtime writes it. */
export const fileEntrySchema = z.object({
  name: z.string(),
  size: z.number().int().min(0),
  type: z.enum(['file', 'directory']),
  mod_time: z.number(),
});
export type FileEntry = z.output<typeof fileEntrySchema>;
export const fileListSchema = z.array(fileEntrySchema);

/** `GET /exists/{path}`. */
export const existsResponseSchema = z.object({ path: z.string(), exists: z.boolean() });
export type ExistsResponse = z.output<typeof existsResponseSchema>;

/** `POST /upload` success. */
export const uploadResponseSchema = z.object({ message: z.string() });

/**
 * Why a runtime or router request was refused. `detail` carries the words (upstream's router answers `{"detail"}`);
 * clients branch on the status and the reason only.
 */
export const RUNTIME_ERROR_REASONS = [
  'InvalidHeader',
  'UnsupportedPort',
  'InvalidPath',
  'InvalidBody',
  'PayloadTooLarge',
  'OutputTooLarge',
  'Unauthenticated',
  'Forbidden',
  'SandboxNotFound',
  'SandboxExpired',
  'NotFound',
  'NotADirectory',
  'IsADirectory',
  'RouteNotFound',
  'MethodNotAllowed',
  'BackendUnavailable',
  'BackendTimeout',
  'ReviewUnavailable',
  'Internal',
] as const;
export type RuntimeErrorReason = (typeof RUNTIME_ERROR_REASONS)[number];
export const runtimeErrorSchema = z.object({ detail: z.string(), reason: z.enum(RUNTIME_ERROR_REASONS) });
export type RuntimeError = z.output<typeof runtimeErrorSchema>;

/** Where a sandbox's runtime is served on its node: `{ownerAddr}{runtimeBasePath(id)}/{operation}[/{path}]`. */
export function runtimeBasePath(sandboxId: string): string {
  return `/v1/sandboxes/${encodeURIComponent(sandboxId)}/runtime`;
}

/** The origin a sandbox's ownerAddr names: `host:port` is plain HTTP, an http(s) origin is kept as is. */
export function ownerAddrOrigin(ownerAddr: string): string {
  if (/^https?:\/\//i.test(ownerAddr)) return ownerAddr.replace(/\/+$/, '');
  return `http://${ownerAddr}`;
}

export type SandboxPath = { ok: true; path: string } | { ok: false; detail: string };

/**
 * A client's file path, decoded, as a path relative to the sandbox's workspace root: leading slashes dropped (upstream's
 * runtime joins every path under its base directory), `.` and empty segments dropped, `..` resolved. Refused: control
 * characters (a NUL truncates at the syscall), and any `..` that climbs above the root. `''` names the root itself.
 */
export function sandboxPath(raw: string): SandboxPath {
  for (let i = 0; i < raw.length; i++) {
    const code = raw.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return { ok: false, detail: 'path contains control characters' };
  }
  if (raw.includes('\\')) return { ok: false, detail: 'path must use forward slashes' };
  const parts: string[] = [];
  for (const segment of raw.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (parts.length === 0) return { ok: false, detail: 'path escapes the sandbox workspace' };
      parts.pop();
      continue;
    }
    parts.push(segment);
  }
  return { ok: true, path: parts.join('/') };
}

/** The `{path}` of a request path `/{operation}/{path}` (still percent-encoded), decoded; undefined when malformed. */
export function decodePathSegment(encoded: string): string | undefined {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
}

/**
 * The Secret the SandboxClaim controller writes for a served claim (named after it, controlled by it): what the router
 * reads to reach the sandbox. Values are base64, as the API serves them.
 */
export const claimSecretSchema = z
  .object({
    type: z.literal(SANDBOX_SECRET_TYPE),
    metadata: z
      .object({
        name: z.string(),
        ownerReferences: z
          .array(
            z
              .object({ kind: z.string(), name: z.string(), uid: z.string(), controller: z.boolean().optional() })
              .loose(),
          )
          .optional(),
      })
      .loose(),
    data: z.object({ id: z.string(), token: z.string(), ownerAddr: z.string(), deadline: z.string() }).loose(),
  })
  .loose();
export type ClaimSecret = z.output<typeof claimSecretSchema>;
