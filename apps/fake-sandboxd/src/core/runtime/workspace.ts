// One sandbox's simulated file system: an in-memory tree under the workspace
// root (what upstream's runtime calls its base directory, /app). Paths are
// already normalized by libs/api's sandboxPath (relative, no `..`); nothing
// here touches the host's disk.

/** How a workspace operation failed; the HTTP layer maps each to its status. */
export type WorkspaceProblem = 'not-found' | 'not-a-directory' | 'is-a-directory' | 'quota';

export class WorkspaceError extends Error {
  override name = 'WorkspaceError';
  readonly problem: WorkspaceProblem;
  constructor(problem: WorkspaceProblem, message: string) {
    super(message);
    this.problem = problem;
  }
}

interface FileNode {
  kind: 'file';
  data: Buffer;
  /** Epoch ms. */
  mtime: number;
}

interface DirNode {
  kind: 'directory';
  children: Map<string, FileNode | DirNode>;
  mtime: number;
}

export interface WorkspaceEntry {
  name: string;
  type: 'file' | 'directory';
  size: number;
  /** Epoch ms. */
  mtime: number;
}

/** A directory's size, as `stat` reports one on a typical Linux file system. */
const DIRECTORY_SIZE = 4096;

export class Workspace {
  readonly #root: DirNode;
  readonly #maxBytes: number;
  readonly #now: () => number;
  #bytes = 0;

  constructor(options: { maxBytes: number; now: () => number }) {
    this.#maxBytes = options.maxBytes;
    this.#now = options.now;
    this.#root = { kind: 'directory', children: new Map(), mtime: this.#now() };
  }

  /** Bytes held by every file. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Writes a whole file, making its parent directories; replaces a file already there. */
  write(path: string, data: Buffer): void {
    const parts = split(path);
    const name = parts.pop();
    if (name === undefined) throw new WorkspaceError('is-a-directory', 'the workspace root is a directory');
    const parent = this.#directory(parts, true);
    const existing = parent.children.get(name);
    if (existing?.kind === 'directory') throw new WorkspaceError('is-a-directory', `${path} is a directory`);
    const grown = this.#bytes - (existing?.data.length ?? 0) + data.length;
    if (grown > this.#maxBytes)
      throw new WorkspaceError('quota', `the workspace holds at most ${this.#maxBytes} bytes`);
    const now = this.#now();
    parent.children.set(name, { kind: 'file', data, mtime: now });
    parent.mtime = now;
    this.#bytes = grown;
  }

  /** A file's content; undefined when the path is not a file. */
  read(path: string): Buffer | undefined {
    const node = this.#lookup(path);
    return node?.kind === 'file' ? node.data : undefined;
  }

  /** A directory's entries in name order. */
  list(path: string): WorkspaceEntry[] {
    const node = this.#lookup(path);
    if (node === undefined) throw new WorkspaceError('not-found', `${path || '/'}: no such directory`);
    if (node.kind !== 'directory') throw new WorkspaceError('not-a-directory', `${path} is not a directory`);
    return [...node.children.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, child]) => ({
        name,
        type: child.kind,
        size: child.kind === 'file' ? child.data.length : DIRECTORY_SIZE,
        mtime: child.mtime,
      }));
  }

  exists(path: string): boolean {
    return this.#lookup(path) !== undefined;
  }

  isDirectory(path: string): boolean {
    return this.#lookup(path)?.kind === 'directory';
  }

  #lookup(path: string): FileNode | DirNode | undefined {
    let node: FileNode | DirNode = this.#root;
    for (const part of split(path)) {
      if (node.kind !== 'directory') return undefined;
      const next: FileNode | DirNode | undefined = node.children.get(part);
      if (next === undefined) return undefined;
      node = next;
    }
    return node;
  }

  #directory(parts: readonly string[], create: boolean): DirNode {
    let dir = this.#root;
    for (const part of parts) {
      const next = dir.children.get(part);
      if (next?.kind === 'file') throw new WorkspaceError('not-a-directory', `${part} is a file`);
      if (next !== undefined) {
        dir = next;
        continue;
      }
      if (!create) throw new WorkspaceError('not-found', `${part}: no such directory`);
      const made: DirNode = { kind: 'directory', children: new Map(), mtime: this.#now() };
      dir.children.set(part, made);
      dir.mtime = made.mtime;
      dir = made;
    }
    return dir;
  }
}

function split(path: string): string[] {
  return path === '' ? [] : path.split('/');
}
