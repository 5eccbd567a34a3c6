// The file operations of the runtime contract over a sandbox's workspace:
// upload (multipart), download, list and exists (the path after the operation).
import {
  MAX_FILE_BYTES,
  MULTIPART_OVERHEAD_BYTES,
  sandboxPath,
  type ExistsResponse,
  type FileEntry,
  type RuntimeErrorReason,
} from '@warmpool/api';
import { readBodyBytes } from '@warmpool/runtime';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { WorkspaceError, type WorkspaceProblem } from '../core/runtime/workspace.js';
import { pathOf, refuse, type Served } from './runtime-answers.js';

const PROBLEM: Record<WorkspaceProblem, [ContentfulStatusCode, RuntimeErrorReason]> = {
  'not-found': [404, 'NotFound'],
  'not-a-directory': [400, 'NotADirectory'],
  'is-a-directory': [400, 'IsADirectory'],
  quota: [413, 'PayloadTooLarge'],
};

export const upload: Served = async (c, workspace) => {
  const raw = await readBodyBytes(c, MAX_FILE_BYTES + MULTIPART_OVERHEAD_BYTES);
  if (typeof raw === 'symbol')
    return raw.description === 'body too large'
      ? refuse(c, 413, 'PayloadTooLarge', `a file is at most ${MAX_FILE_BYTES} bytes`)
      : refuse(c, 400, 'InvalidBody', 'the body could not be read');
  const file = await multipartFile(raw, c.req.header('content-type'));
  if (file === undefined) return refuse(c, 400, 'InvalidBody', 'body must be multipart/form-data with a "file" part');
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
};

export const download: Served = (c, workspace) => {
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
};

export const list: Served = (c, workspace) => {
  const target = pathOf(c, 'list');
  if (target instanceof Response) return target;
  const { path } = target;
  if (!workspace.isDirectory(path)) return refuse(c, 404, 'NotFound', 'Path is not a directory');
  const entries: FileEntry[] = workspace
    .list(path)
    .map((e) => ({ name: e.name, size: e.size, type: e.type, mod_time: e.mtime / 1000 }));
  return c.json(entries);
};

export const exists: Served = (c, workspace) => {
  const target = pathOf(c, 'exists');
  if (target instanceof Response) return target;
  return c.json<ExistsResponse>({ path: target.asked, exists: workspace.exists(target.path) });
};

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
