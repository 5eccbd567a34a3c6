// What the runtime routes share: their error body, the handler shape behind
// the sandbox-token check, and the `{path}` rules of the path-taking routes.
import {
  decodePathSegment,
  sandboxPath,
  type RuntimeError,
  type RuntimeErrorReason,
  type RuntimeOperation,
} from '@warmpool/api';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Workspace } from '../core/runtime/workspace.js';

/** A runtime operation served on the workspace of a sandbox whose own token was presented. */
export type Served = (c: Context, workspace: Workspace) => Response | Promise<Response>;

export function refuse(c: Context, status: ContentfulStatusCode, reason: RuntimeErrorReason, detail: string): Response {
  return c.json<RuntimeError>({ detail, reason }, status);
}

/**
 * The `{path}` after `/runtime/{operation}/`: as the client wrote it (decoded) and as a workspace path, checked by the
 * path rules; a Response when refused.
 */
export function pathOf(c: Context, operation: RuntimeOperation): { asked: string; path: string } | Response {
  const pathname = new URL(c.req.url).pathname;
  const marker = `/runtime/${operation}`;
  const rest = pathname.slice(pathname.indexOf(marker) + marker.length).replace(/^\//, '');
  const asked = decodePathSegment(rest);
  if (asked === undefined) return refuse(c, 400, 'InvalidPath', 'path is not valid percent-encoding');
  const parsed = sandboxPath(asked);
  return parsed.ok ? { asked, path: parsed.path } : refuse(c, 400, 'InvalidPath', parsed.detail);
}
