// The sandbox runtime contract (docs/sandbox-runtime.md) over the simulated
// runtimes: upstream's five operations under /v1/sandboxes/{id}/runtime/,
// each taken only with that sandbox's own token. No bearer is 401; a wrong
// token is 404, the same answer as an unknown id (as release and renew).
import {
  decodePathSegment,
  executeRequestSchema,
  MAX_COMMAND_OUTPUT_BYTES,
  MAX_EXECUTE_BODY_BYTES,
  MAX_FILE_BYTES,
  MULTIPART_OVERHEAD_BYTES,
  sandboxPath,
  type ExistsResponse,
  type FileEntry,
  type RuntimeError,
  type RuntimeErrorReason,
  type RuntimeOperation,
} from '@warmpool/api';
import { bearerToken, readBodyBytes, readJsonBody, tokensEqual } from '@warmpool/runtime';
import type { Context, Env, Handler, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import { failed, runCommand } from '../core/runtime/commands.js';
import type { SandboxRuntimes } from '../core/runtime/runtimes.js';
import { ShlexError, shlexSplit } from '../core/runtime/shlex.js';
import { WorkspaceError, type Workspace, type WorkspaceProblem } from '../core/runtime/workspace.js';

const BASE = '/v1/sandboxes/:id/runtime';

const PROBLEM: Record<WorkspaceProblem, [ContentfulStatusCode, RuntimeErrorReason]> = {
  'not-found': [404, 'NotFound'],
  'not-a-directory': [400, 'NotADirectory'],
  'is-a-directory': [400, 'IsADirectory'],
  quota: [413, 'PayloadTooLarge'],
};

function refuse(c: Context, status: ContentfulStatusCode, reason: RuntimeErrorReason, detail: string): Response {
  return c.json<RuntimeError>({ detail, reason }, status);
}

type Served = (c: Context, workspace: Workspace) => Response | Promise<Response>;

/**
 * The `{path}` after `/runtime/{operation}/`: as the client wrote it (decoded) and as a workspace path, checked by the
 * path rules; a Response when refused.
 */
function pathOf(c: Context, operation: RuntimeOperation): { asked: string; path: string } | Response {
  const pathname = new URL(c.req.url).pathname;
  const marker = `/runtime/${operation}`;
  const rest = pathname.slice(pathname.indexOf(marker) + marker.length).replace(/^\//, '');
  const asked = decodePathSegment(rest);
  if (asked === undefined) return refuse(c, 400, 'InvalidPath', 'path is not valid percent-encoding');
  const parsed = sandboxPath(asked);
  return parsed.ok ? { asked, path: parsed.path } : refuse(c, 400, 'InvalidPath', parsed.detail);
}

export function mountRuntimeRoutes<E extends Env>(app: Hono<E>, core: FakeSandboxd, runtimes: SandboxRuntimes): void {
  const scoped =
    (operation: RuntimeOperation, serve: Served): Handler<E> =>
    (c) => {
      runtimes.count(operation);
      const presented = bearerToken(c.req.header('authorization'));
      if (presented === undefined) return refuse(c, 401, 'Unauthenticated', 'missing bearer token');
      const id = c.req.param('id') ?? '';
      const claim = core.get(id);
      if (claim === undefined || !tokensEqual(presented, claim.token))
        return refuse(c, 404, 'SandboxNotFound', 'unknown sandbox');
      return serve(c, runtimes.workspaceOf(id));
    };

  app.post(
    `${BASE}/execute`,
    scoped('execute', async (c, workspace) => {
      const body = await readJsonBody(c, executeRequestSchema, {
        maxBytes: MAX_EXECUTE_BODY_BYTES,
        invalidMessage: 'body must be {"command": string}',
      });
      if (!body.ok)
        return body.problem === 'too_large'
          ? refuse(c, 413, 'PayloadTooLarge', `an execute body is at most ${MAX_EXECUTE_BODY_BYTES} bytes`)
          : refuse(c, 400, 'InvalidBody', body.error);
      if (body.value.command.trim() === '') return refuse(c, 400, 'InvalidBody', 'command must not be empty');
      let words: string[];
      try {
        words = shlexSplit(body.value.command);
      } catch (err) {
        if (err instanceof ShlexError) return c.json(failed(err.message));
        throw err;
      }
      const result = await runCommand(words, workspace, runtimes.settings.execTimeoutMs);
      const size = Buffer.byteLength(result.stdout) + Buffer.byteLength(result.stderr);
      if (size > MAX_COMMAND_OUTPUT_BYTES)
        return refuse(c, 413, 'OutputTooLarge', `command output is ${size} bytes, over ${MAX_COMMAND_OUTPUT_BYTES}`);
      return c.json(result);
    }),
  );

  app.post(
    `${BASE}/upload`,
    scoped('upload', async (c, workspace) => {
      const raw = await readBodyBytes(c, MAX_FILE_BYTES + MULTIPART_OVERHEAD_BYTES);
      if (typeof raw === 'symbol')
        return raw.description === 'body too large'
          ? refuse(c, 413, 'PayloadTooLarge', `a file is at most ${MAX_FILE_BYTES} bytes`)
          : refuse(c, 400, 'InvalidBody', 'the body could not be read');
      const file = await multipartFile(raw, c.req.header('content-type'));
      if (file === undefined)
        return refuse(c, 400, 'InvalidBody', 'body must be multipart/form-data with a "file" part');
      if (file.data.length > MAX_FILE_BYTES)
        return refuse(c, 413, 'PayloadTooLarge', `a file is at most ${MAX_FILE_BYTES} bytes`);
      const path = sandboxPath(file.name);
      if (!path.ok || path.path === '') return refuse(c, 400, 'InvalidPath', path.ok ? 'no file name' : path.detail);
      try {
        workspace.write(path.path, file.data);
      } catch (err) {
        return workspaceRefusal(c, err);
      }
      return c.json({ message: `File '${file.name}' uploaded successfully.` });
    }),
  );

  app.get(
    `${BASE}/download/*`,
    scoped('download', (c, workspace) => {
      const target = pathOf(c, 'download');
      if (target instanceof Response) return target;
      const { path } = target;
      const data = workspace.read(path);
      if (data === undefined) return refuse(c, 404, 'NotFound', 'File not found');
      const name = path.slice(path.lastIndexOf('/') + 1);
      return c.body(new Uint8Array(data), 200, {
        'content-type': 'application/octet-stream',
        'content-disposition': `attachment; filename*=utf-8''${encodeURIComponent(name)}`,
      });
    }),
  );

  app.get(
    `${BASE}/list/*`,
    scoped('list', (c, workspace) => {
      const target = pathOf(c, 'list');
      if (target instanceof Response) return target;
      const { path } = target;
      if (!workspace.isDirectory(path)) return refuse(c, 404, 'NotFound', 'Path is not a directory');
      const entries: FileEntry[] = workspace
        .list(path)
        .map((e) => ({ name: e.name, size: e.size, type: e.type, mod_time: e.mtime / 1000 }));
      return c.json(entries);
    }),
  );

  app.get(
    `${BASE}/exists/*`,
    scoped('exists', (c, workspace) => {
      const target = pathOf(c, 'exists');
      if (target instanceof Response) return target;
      return c.json<ExistsResponse>({ path: target.asked, exists: workspace.exists(target.path) });
    }),
  );
}

function workspaceRefusal(c: Context, err: unknown): Response {
  if (!(err instanceof WorkspaceError)) throw err;
  const [status, reason] = PROBLEM[err.problem];
  return refuse(c, status, reason, err.message);
}

/** The `file` part of a multipart/form-data body: its filename (the destination path) and bytes. */
async function multipartFile(
  body: Buffer,
  contentType: string | undefined,
): Promise<{ name: string; data: Buffer } | undefined> {
  if (contentType === undefined || !contentType.toLowerCase().startsWith('multipart/form-data')) return undefined;
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(body), { headers: { 'content-type': contentType } }).formData();
  } catch {
    return undefined;
  }
  const part = form.get('file');
  if (part === null || typeof part === 'string') return undefined;
  return { name: part.name, data: Buffer.from(await part.arrayBuffer()) };
}
