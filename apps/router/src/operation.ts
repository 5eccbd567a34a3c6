// What a request asks of the sandbox: one of upstream's five operations and,
// for download/list/exists, the file path after it, decoded and checked by the
// path rules (libs/api sandboxPath) before anything is resolved or forwarded.
// What is forwarded is the sandbox's route for the checked path, re-encoded:
// never the caller's bytes.
import {
  decodePathSegment,
  MAX_EXECUTE_BODY_BYTES,
  MAX_FILE_BYTES,
  MULTIPART_OVERHEAD_BYTES,
  runtimeBasePath,
  sandboxPath,
  type RuntimeOperation,
} from '@warmpool/api';
import { refusal, type Refusal } from './refusal.js';

export interface Operation {
  name: RuntimeOperation;
  /** The checked path relative to the workspace root ('' = the root); undefined for execute and upload. */
  path: string | undefined;
  /** The most body bytes the operation takes; 0 = it takes none. */
  maxBodyBytes: number;
}

/** How many body bytes each operation takes: a command, one file in a multipart envelope, none for reads. */
export const MAX_BODY_BYTES: Record<RuntimeOperation, number> = {
  execute: MAX_EXECUTE_BODY_BYTES,
  upload: MAX_FILE_BYTES + MULTIPART_OVERHEAD_BYTES,
  download: 0,
  list: 0,
  exists: 0,
};

export function operationOf(name: RuntimeOperation, pathname: string): Operation | Refusal {
  const maxBodyBytes = MAX_BODY_BYTES[name];
  if (name === 'execute' || name === 'upload') return { name, path: undefined, maxBodyBytes };
  const prefix = `/${name}`;
  const rest = pathname.startsWith(`${prefix}/`) ? pathname.slice(prefix.length + 1) : '';
  const decoded = decodePathSegment(rest);
  if (decoded === undefined) return refusal('InvalidPath', 'path is not valid percent-encoding');
  const checked = sandboxPath(decoded);
  if (!checked.ok) return refusal('InvalidPath', checked.detail);
  return { name, path: checked.path, maxBodyBytes };
}

/** The sandbox's own path for the operation, under its runtime base. */
export function sandboxRequestPath(sandboxId: string, operation: Operation): string {
  const base = `${runtimeBasePath(sandboxId)}/${operation.name}`;
  return operation.path === undefined ? base : `${base}/${encodeURIComponent(operation.path)}`;
}

/** A declared Content-Length over the operation's cap: refused before a byte is read or forwarded. */
export function declaredTooLarge(contentLength: string | undefined, operation: Operation): Refusal | undefined {
  if (contentLength === undefined) return undefined;
  const length = Number(contentLength);
  if (Number.isSafeInteger(length) && length <= operation.maxBodyBytes) return undefined;
  if (operation.maxBodyBytes === 0 && length === 0) return undefined;
  return refusal(
    'PayloadTooLarge',
    operation.maxBodyBytes === 0
      ? `${operation.name} takes no body`
      : `${operation.name} takes at most ${operation.maxBodyBytes} bytes`,
  );
}
